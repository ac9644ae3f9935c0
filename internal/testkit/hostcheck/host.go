package hostcheck

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// Host is what the checks read from the machine; tests substitute a fake.
type Host interface {
	Getenv(key string) string
	Geteuid() int
	Getwd() (string, error)
	LookPath(file string) (string, error)
	Stat(name string) (fs.FileInfo, error)
	ReadFile(name string) ([]byte, error)
	Glob(pattern string) ([]string, error)
}

// OS returns the real host.
func OS() Host { return osHost{} }

type osHost struct{}

func (osHost) Getenv(key string) string              { return os.Getenv(key) }
func (osHost) Geteuid() int                          { return os.Geteuid() }
func (osHost) Getwd() (string, error)                { return os.Getwd() }
func (osHost) LookPath(file string) (string, error)  { return exec.LookPath(file) }
func (osHost) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }
func (osHost) ReadFile(name string) ([]byte, error)  { return os.ReadFile(name) }
func (osHost) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }
