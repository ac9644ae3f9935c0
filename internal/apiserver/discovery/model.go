package discovery

// group is one API group with its versions in order of preference (the
// order in which they first appear in the resource list).
type group struct {
	name     string
	versions []version
}

type version struct {
	name      string
	resources []Resource
}

// groupsOf arranges resources by group and version, keeping the order of
// first appearance so that discovery output is stable and the first version
// listed for a group is its preferred one.
func groupsOf(resources []Resource) []group {
	var groups []group
	groupIndex := map[string]int{}
	for _, r := range resources {
		gi, ok := groupIndex[r.Group]
		if !ok {
			gi = len(groups)
			groupIndex[r.Group] = gi
			groups = append(groups, group{name: r.Group})
		}
		g := &groups[gi]
		vi := -1
		for i := range g.versions {
			if g.versions[i].name == r.Version {
				vi = i
			}
		}
		if vi < 0 {
			vi = len(g.versions)
			g.versions = append(g.versions, version{name: r.Version})
		}
		g.versions[vi].resources = append(g.versions[vi].resources, r)
	}
	return groups
}
