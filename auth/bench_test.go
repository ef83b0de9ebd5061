package auth

import (
	"context"
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
	s, _, _ := newTestService(b, true)
	ctx := context.Background()
	_, tok, err := s.Authenticate(ctx, basic("admin", "admin-password"), "")
	if err != nil {
		b.Fatal(err)
	}
	benchAuthenticate(b, s, "Bearer "+tok)
}

// BenchmarkAPIKey is what every call with an API key costs: a SHA-256 of
// the key and a map lookup (docs/benchmarks.md).
func BenchmarkAPIKey(b *testing.B) {
	s, cat, _ := newTestService(b, true)
	admin, _ := cat.User(catalog.AdminUser)
	key, _, err := s.CreateAPIKey(context.Background(), identityOf(admin, MethodPassword), &catalog.CreateAPIKey{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	benchAuthenticate(b, s, "Bearer "+key)
}

func benchAuthenticate(b *testing.B, s *Service, header string) {
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, _, err := s.Authenticate(ctx, header, "127.0.0.1:1"); err != nil {
			b.Fatal(err)
		}
	}
}
