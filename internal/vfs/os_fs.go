package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Default is the real filesystem. It holds no state, so sharing it is safe.
var Default FS = osFS{}

// OS returns the real filesystem.
func OS() FS { return Default }

// osFS is the real filesystem, a thin layer over package os.
type osFS struct{}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenAppend(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error              { return os.Remove(name) }
func (osFS) RemoveAll(name string) error           { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error  { return os.Rename(oldname, newname) }
func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// MkdirAll creates dir and its missing parents, and syncs the parent of every
// directory it created: MemFS treats MkdirAll'd directories as durable, and
// that model is only honest if the real filesystem makes it so. MkdirAll is
// rare (once per table or bucket), so the extra fsyncs cost nothing that
// matters.
func (o osFS) MkdirAll(dir string, perm os.FileMode) error {
	missing := missingDirs(filepath.Clean(dir))
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	for _, d := range missing {
		if err := o.SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// missingDirs returns dir and those of its ancestors that do not exist yet,
// deepest first.
func missingDirs(dir string) []string {
	var out []string
	for {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			return out
		}
		out = append(out, dir)
		parent := filepath.Dir(dir)
		if parent == dir {
			return out
		}
		dir = parent
	}
}

func (osFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close() // the sync error is the one worth reporting
		return err
	}
	return d.Close()
}

// osFile adapts *os.File to File.
type osFile struct{ *os.File }

// Truncate also moves the write offset to size: a file from Create is not
// opened with O_APPEND, and without the seek its next write would land at the
// old offset and leave a hole, breaking "later writes append at size".
func (f osFile) Truncate(size int64) error {
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	_, err := f.File.Seek(size, 0)
	return err
}

func (f osFile) Size() (int64, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
