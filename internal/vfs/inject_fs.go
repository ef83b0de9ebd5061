package vfs

import "os"

// WithInjector wraps fs so that in decides, before each operation, whether
// it fails: the same hook MemFS.InjectError installs, over any FS, the real
// one included. in may also block, which makes the operation slow (a disk
// that stalls). The operations are reported as MemFS reports them (inject.go);
// File.Close and File.Name are not.
func WithInjector(fs FS, in Injector) FS {
	j := &injectFS{fs: fs}
	j.in.set(in)
	return j
}

type injectFS struct {
	fs FS
	in injector
}

func (j *injectFS) Create(name string) (File, error) {
	if err := j.in.check(OpCreate, name); err != nil {
		return nil, err
	}
	return j.file(j.fs.Create(name))
}

func (j *injectFS) OpenAppend(name string) (File, error) {
	if err := j.in.check(OpOpen, name); err != nil {
		return nil, err
	}
	return j.file(j.fs.OpenAppend(name))
}

func (j *injectFS) Open(name string) (File, error) {
	if err := j.in.check(OpOpen, name); err != nil {
		return nil, err
	}
	return j.file(j.fs.Open(name))
}

func (j *injectFS) file(f File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &injectFile{File: f, in: &j.in}, nil
}

func (j *injectFS) Remove(name string) error {
	if err := j.in.check(OpRemove, name); err != nil {
		return err
	}
	return j.fs.Remove(name)
}

func (j *injectFS) RemoveAll(name string) error {
	if err := j.in.check(OpRemove, name); err != nil {
		return err
	}
	return j.fs.RemoveAll(name)
}

func (j *injectFS) Rename(oldname, newname string) error {
	if err := j.in.check(OpRename, oldname); err != nil {
		return err
	}
	return j.fs.Rename(oldname, newname)
}

func (j *injectFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := j.in.check(OpMkdir, dir); err != nil {
		return err
	}
	return j.fs.MkdirAll(dir, perm)
}

func (j *injectFS) List(dir string) ([]string, error) {
	if err := j.in.check(OpList, dir); err != nil {
		return nil, err
	}
	return j.fs.List(dir)
}

func (j *injectFS) Stat(name string) (os.FileInfo, error) {
	if err := j.in.check(OpStat, name); err != nil {
		return nil, err
	}
	return j.fs.Stat(name)
}

func (j *injectFS) SyncDir(dir string) error {
	if err := j.in.check(OpSyncDir, dir); err != nil {
		return err
	}
	return j.fs.SyncDir(dir)
}

// injectFile reports a file's operations to its filesystem's hook.
type injectFile struct {
	File
	in *injector
}

func (f *injectFile) Write(p []byte) (int, error) {
	if err := f.in.check(OpWrite, f.Name()); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *injectFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.in.check(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *injectFile) Sync() error {
	if err := f.in.check(OpSync, f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *injectFile) Truncate(size int64) error {
	if err := f.in.check(OpTruncate, f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *injectFile) Size() (int64, error) {
	if err := f.in.check(OpStat, f.Name()); err != nil {
		return 0, err
	}
	return f.File.Size()
}
