// Package vfs is the filesystem seam of Lakestream. Every disk access of the
// columnar log (and of the table directories tables keeps) goes through an
// FS, so that crash and I/O-error tests are ordinary unit tests: MemFS keeps
// what was synced apart from what was only written, CrashClone returns the
// filesystem as a crash could leave it, and inject.go fails chosen
// operations. The catalog (SQLite) and the lake (iceberg-go's own I/O) do
// not go through it.
//
// vfs imports nothing of the project.
package vfs

import (
	"io"
	"os"
)

// File is an open file. Writes go at the end for files opened by Create or
// OpenAppend; ReadAt reads anywhere.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
	// Sync makes everything written so far durable.
	Sync() error
	// Truncate cuts the file to size bytes; later writes append at size.
	Truncate(size int64) error
	// Size is the current length of the file, synced or not.
	Size() (int64, error)
	Name() string
}

// FS is the filesystem. Names are slash-separated paths as the OS takes them.
type FS interface {
	// Create creates or truncates a file for writing and reading.
	Create(name string) (File, error)
	// OpenAppend opens an existing file for reading and appending.
	OpenAppend(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries in dir, sorted.
	List(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the creations, removals and renames in dir durable.
	SyncDir(dir string) error
}
