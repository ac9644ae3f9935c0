package spec

import (
	"bufio"
	"errors"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type userRequest struct {
	imageUser string // the image's USER: "", "uid", "name", "uid:gid", "name:group"
	uid       *runtimeapi.Int64Value
	username  string
	gid       *runtimeapi.Int64Value
	groups    []int64
	policy    runtimeapi.SupplementalGroupsPolicy
}

type passwdEntry struct {
	name     string
	uid, gid uint32
}

type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// setUser resolves the process's uid, gid and supplemental groups. Names are
// looked up in the image's own /etc/passwd and /etc/group, read through
// os.Root so that a symlink in the image can never make us read a host file.
func setUser(s *specs.Spec, rootfs string, req userRequest) error {
	// The CRI requires this: a group alone would pair with whatever user
	// the image happens to name.
	if req.gid != nil && req.uid == nil && req.username == "" {
		return invalid("run_as_group needs run_as_user or run_as_username")
	}
	db := userDB{rootfs: rootfs}
	userPart, groupPart, _ := strings.Cut(req.imageUser, ":")
	switch {
	case req.uid != nil:
		userPart = strconv.FormatInt(req.uid.GetValue(), 10)
		groupPart = ""
	case req.username != "":
		userPart = req.username
		groupPart = ""
	}
	var u passwdEntry
	if userPart != "" {
		var err error
		if u, err = db.lookupUser(userPart); err != nil {
			return err
		}
	}
	if groupPart != "" {
		g, err := db.lookupGroup(groupPart)
		if err != nil {
			return err
		}
		u.gid = g.gid
	}
	if req.gid != nil {
		gid, err := toID(req.gid.GetValue())
		if err != nil {
			return invalid("run_as_group: %v", err)
		}
		u.gid = gid
	}
	gids := []uint32{u.gid}
	if req.policy == runtimeapi.SupplementalGroupsPolicy_Merge && u.name != "" {
		member, err := db.groupsOf(u.name)
		if err != nil {
			return err
		}
		gids = append(gids, member...)
	}
	for _, g := range req.groups {
		gid, err := toID(g)
		if err != nil {
			return invalid("supplemental group: %v", err)
		}
		gids = append(gids, gid)
	}
	s.Process.User = specs.User{UID: u.uid, GID: u.gid, AdditionalGids: dedupe(gids)}
	return nil
}

func toID(v int64) (uint32, error) {
	if v < 0 || v >= math.MaxUint32 {
		return 0, errors.New("id " + strconv.FormatInt(v, 10) + " out of range")
	}
	return uint32(v), nil
}

func dedupe(ids []uint32) []uint32 {
	seen := map[uint32]bool{}
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// userDB reads the image's user and group databases on demand.
type userDB struct{ rootfs string }

func (d userDB) lookupUser(user string) (passwdEntry, error) {
	entries, err := d.passwd()
	if err != nil {
		return passwdEntry{}, err
	}
	if n, err := strconv.ParseInt(user, 10, 64); err == nil {
		uid, err := toID(n)
		if err != nil {
			return passwdEntry{}, invalid("user: %v", err)
		}
		for _, e := range entries {
			if e.uid == uid {
				return e, nil
			}
		}
		// A numeric user need not exist in the image: it runs with gid 0.
		return passwdEntry{uid: uid}, nil
	}
	for _, e := range entries {
		if e.name == user {
			return e, nil
		}
	}
	return passwdEntry{}, invalid("user %q not found in the image's /etc/passwd", user)
}

func (d userDB) lookupGroup(group string) (groupEntry, error) {
	if n, err := strconv.ParseInt(group, 10, 64); err == nil {
		gid, err := toID(n)
		if err != nil {
			return groupEntry{}, invalid("group: %v", err)
		}
		return groupEntry{gid: gid}, nil
	}
	entries, err := d.groups()
	if err != nil {
		return groupEntry{}, err
	}
	for _, e := range entries {
		if e.name == group {
			return e, nil
		}
	}
	return groupEntry{}, invalid("group %q not found in the image's /etc/group", group)
}

func (d userDB) groupsOf(user string) ([]uint32, error) {
	entries, err := d.groups()
	if err != nil {
		return nil, err
	}
	var gids []uint32
	for _, e := range entries {
		for _, m := range e.members {
			if m == user {
				gids = append(gids, e.gid)
			}
		}
	}
	return gids, nil
}

func (d userDB) passwd() ([]passwdEntry, error) {
	var out []passwdEntry
	err := d.eachLine("etc/passwd", func(f []string) {
		if len(f) < 4 {
			return
		}
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 == nil && err2 == nil {
			out = append(out, passwdEntry{name: f[0], uid: uint32(uid), gid: uint32(gid)})
		}
	})
	return out, err
}

func (d userDB) groups() ([]groupEntry, error) {
	var out []groupEntry
	err := d.eachLine("etc/group", func(f []string) {
		if len(f) < 3 {
			return
		}
		gid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return
		}
		e := groupEntry{name: f[0], gid: uint32(gid)}
		if len(f) > 3 && f[3] != "" {
			e.members = strings.Split(f[3], ",")
		}
		out = append(out, e)
	})
	return out, err
}

// eachLine calls fn with the colon-separated fields of every non-comment
// line of a file inside the rootfs. A missing file is an empty database.
func (d userDB) eachLine(name string, fn func([]string)) error {
	root, err := os.OpenRoot(d.rootfs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return invalid("open rootfs: %v", err)
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return invalid("read /%s in the image: %v", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fn(strings.Split(line, ":"))
	}
	return sc.Err()
}
