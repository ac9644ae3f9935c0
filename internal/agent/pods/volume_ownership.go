package pods

import (
	"k8s.io/kubernetes/pkg/volume"
)

// setVolumeOwnership gives dir and everything below it the pod's fsGroup
// as upstream's volume plugins do, by upstream's own VolumeOwnership: group
// fsGroup on every entry, group read (and write, unless the volume is
// read-only) added to each file's mode, directories setgid and
// group-searchable. Content and emptyDir volumes are always walked
// whole: their plugins pass no fsGroupChangePolicy either.
func setVolumeOwnership(dir string, fsGroup *int64, readOnly bool) error {
	return volume.NewVolumeOwnership(&plainDir{path: dir, readOnly: readOnly}, dir, fsGroup, nil, nil).ChangePermissions()
}

// plainDir presents a directory the agent prepared as the volume.Mounter
// that upstream's VolumeOwnership takes; of it, the ownership change only
// asks whether the volume is read-only.
type plainDir struct {
	volume.MetricsNil
	path     string
	readOnly bool
}

func (d *plainDir) GetPath() string                          { return d.path }
func (d *plainDir) SetUp(volume.MounterArgs) error           { return nil }
func (d *plainDir) SetUpAt(string, volume.MounterArgs) error { return nil }
func (d *plainDir) GetAttributes() volume.Attributes {
	return volume.Attributes{ReadOnly: d.readOnly, Managed: true}
}
