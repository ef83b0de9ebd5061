package flightsrv

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/lakestream/lakestream/columnarlog"
	"github.com/lakestream/lakestream/internal/arrowmsg"
)

// Scans forward the stored record batches as they are on disk, ZSTD or LZ4
// compressed (the table's log.compression). Arrow C++, Go, Rust and so
// ADBC and pyarrow read that; Arrow Java does only with the optional
// arrow-compression module on its classpath, which the Flight SQL JDBC
// driver does not ship: it fails with "Please add arrow-compression module
// to use CommonsCompressionFactory for ZSTD" (measured with
// flight-sql-jdbc-driver 18.3.0, tests/interop/test_jdbc.py). Such a client
// asks for plain batches per call with a gRPC request header:
//
//	lakestream-compression: none     batches without body compression
//	lakestream-compression: stored   batches as stored (the default)
//
// The JDBC driver sends every connection property it does not know itself
// as a header of each call, so
// jdbc:arrow-flight-sql://host:port?useEncryption=false&lakestream-compression=none
// is enough. Without the header, a client whose user agent is grpc-java
// gets plain batches too, so the JDBC driver also works with a bare URL; a
// Java client with arrow-compression sends "stored" to get the stored
// bytes. Everyone else keeps the zero-copy path.
//
// Plain output only changes scans of compressed batches: each is decoded
// and encoded again uncompressed, a decode's cost, and the wire carries the
// uncompressed size. Query results (DuckDB) and change streams are always
// written uncompressed. docs/flight.md documents the header.
//
// Rejected: a table option or server flag for plain output (it is the
// client, not the table, that cannot read compressed bodies, and ADBC
// clients would lose the zero-copy path), and the user agent alone (a Java
// client with arrow-compression could not get the stored bytes, nor another
// client plain ones).

// CompressionHeader is the gRPC request header that picks the body
// compression of the record batches a DoGet returns.
const CompressionHeader = "lakestream-compression"

// The values of CompressionHeader.
const (
	CompressionNone   = "none"
	CompressionStored = "stored"
)

// plainRequested reports whether the DoGet of ctx must send uncompressed
// record batches, and why (for the log).
func plainRequested(ctx context.Context) (plain bool, why string, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	return plainFromMetadata(md)
}

// plainFromMetadata is plainRequested's decision on the request headers.
// A header that is present decides; an unknown value is refused rather
// than ignored, so a typo does not silently send compressed data to a
// client that cannot read it.
func plainFromMetadata(md metadata.MD) (plain bool, why string, err error) {
	vals := md.Get(CompressionHeader)
	if len(vals) > 0 {
		v := strings.ToLower(strings.TrimSpace(vals[0]))
		for _, o := range vals[1:] {
			if !strings.EqualFold(strings.TrimSpace(o), v) {
				return false, "", fmt.Errorf("%w: conflicting %s headers %q", errInvalid, CompressionHeader, vals)
			}
		}
		switch v {
		case CompressionNone:
			return true, CompressionHeader + ": " + v, nil
		case CompressionStored:
			return false, CompressionHeader + ": " + v, nil
		}
		return false, "", fmt.Errorf("%w: %s header %q: want %q or %q", errInvalid, CompressionHeader, vals[0], CompressionNone, CompressionStored)
	}
	for _, ua := range md.Get("user-agent") {
		if isJavaUserAgent(ua) {
			return true, "user-agent " + ua, nil
		}
	}
	return false, "", nil
}

// isJavaUserAgent recognises grpc-java ("grpc-java-netty/1.65.1",
// "grpc-java-okhttp/..."), which the JDBC driver and every Arrow Java
// Flight client use. The application's own prefix comes first when it sets
// one, hence Contains.
func isJavaUserAgent(ua string) bool {
	return strings.Contains(strings.ToLower(ua), "grpc-java")
}

// wireCodec is the body compression a stored batch is sent with.
func wireCodec(stored columnarlog.Codec, plain bool) arrowmsg.Codec {
	if plain {
		return arrowmsg.CodecNone
	}
	return arrowmsg.Codec(stored)
}
