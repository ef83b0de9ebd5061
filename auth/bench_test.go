package auth

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"testing"

	"github.com/lakestream/lakestream/catalog"
)

// BenchmarkLogin is one password check with the default argon2id
// parameters (what a login costs the node); BenchmarkBearer is what every
// call with a token costs (docs/benchmarks.md).
//
//	go test -run '^$' -bench 'Login|Bearer|APIKey' ./auth
func BenchmarkLogin(b *testing.B) {
	h, err := hashPassword("correct horse battery", DefaultHashParams)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if ok, err := checkPassword("correct horse battery", h); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkBearer(b *testing.B) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, filepath.Join(b.TempDir(), "catalog.db"), catalog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	s, err := NewService(Config{Required: true, Users: cat, Key: make([]byte, KeyBytes), Hash: cheap})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Bootstrap(ctx, "admin-password"); err != nil {
		b.Fatal(err)
	}
	_, tok, err := s.Authenticate(ctx, "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:admin-password")), "")
	if err != nil {
		b.Fatal(err)
	}
	header := "Bearer " + tok
	b.ResetTimer()
	for range b.N {
		if _, _, err := s.Authenticate(ctx, header, "127.0.0.1:1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAPIKey is what every call with an API key costs: a SHA-256 of
// the key and a map lookup (docs/benchmarks.md).
func BenchmarkAPIKey(b *testing.B) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, filepath.Join(b.TempDir(), "catalog.db"), catalog.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer cat.Close()
	s, err := NewService(Config{Required: true, Users: cat, Key: make([]byte, KeyBytes), Hash: cheap})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Bootstrap(ctx, "admin-password"); err != nil {
		b.Fatal(err)
	}
	admin, _ := cat.User(catalog.AdminUser)
	key, _, err := s.CreateAPIKey(ctx, identityOf(admin, MethodPassword), &catalog.CreateAPIKey{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	header := "Bearer " + key
	b.ResetTimer()
	for range b.N {
		if _, _, err := s.Authenticate(ctx, header, "127.0.0.1:1"); err != nil {
			b.Fatal(err)
		}
	}
}
