package duck

/*
#include "cabi.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// DuckDB keeps "extra data", "bind data" and "init data" as void pointers
// and frees them with a delete callback. A Go value is handed over as a
// cgo.Handle stored in C memory: the pointer is stable and not Go memory, so
// no pinning is needed, and lsDeleteHandle releases both.

// destroyer is implemented by handle values that own resources to free when
// DuckDB drops them.
type destroyer interface{ destroy() }

// newHandle returns C memory holding a handle to v. DuckDB frees it through
// deleteCallback.
func newHandle(v any) unsafe.Pointer {
	p := C.malloc(C.size_t(unsafe.Sizeof(cgo.Handle(0))))
	*(*cgo.Handle)(p) = cgo.NewHandle(v)
	return p
}

// handleValue returns the value behind a pointer from newHandle.
func handleValue[T any](p unsafe.Pointer) T {
	return (*(*cgo.Handle)(p)).Value().(T)
}

// deleteCallback is the C function pointer of lsDeleteHandle.
var deleteCallback = unsafe.Pointer(C.lsDeleteHandle)

//export lsDeleteHandle
func lsDeleteHandle(p unsafe.Pointer) {
	if p == nil {
		return
	}
	h := *(*cgo.Handle)(p)
	if d, ok := h.Value().(destroyer); ok {
		d.destroy()
	}
	h.Delete()
	C.free(p)
}
