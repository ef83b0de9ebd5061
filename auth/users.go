package auth

import (
	"context"
	"fmt"

	"github.com/lakestream/lakestream/catalog"
)

// Exec applies a user statement (CREATE USER, ALTER USER, DROP USER) for
// who, which must be a superuser: for now only the admin manages users;
// and DROP API KEY (CREATE API KEY, which returns the key, is
// CreateAPIKey).
// ok is false for any other statement.
func (s *Service) Exec(ctx context.Context, who Identity, stmt catalog.Statement) (ok bool, err error) {
	switch st := stmt.(type) {
	case *catalog.CreateUser, *catalog.AlterUser, *catalog.DropUser:
		if !who.Superuser {
			return true, fmt.Errorf("%w: user %q may not manage users: only a superuser (admin) may", ErrPermissionDenied, who.User)
		}
		return true, s.exec(ctx, st)
	case *catalog.DropAPIKey:
		return true, s.dropAPIKey(ctx, who, st) // apikeys.go
	case *catalog.CreateAPIKey:
		return true, fmt.Errorf("%w: CREATE API KEY returns the key: run it as a query (execute, not execute update), whose one row holds it", catalog.ErrInvalid)
	}
	return false, nil
}

func (s *Service) exec(ctx context.Context, stmt catalog.Statement) error {
	switch st := stmt.(type) {
	case *catalog.CreateUser:
		if _, exists := s.cfg.Users.User(st.Name); exists && st.IfNotExists {
			return nil
		}
		h, err := s.hash(ctx, st.Password)
		if err != nil {
			return err
		}
		_, _, err = s.cfg.Users.CreateUser(ctx, st.Name, h, false, st.IfNotExists)
		return err
	case *catalog.AlterUser:
		if _, exists := s.cfg.Users.User(st.Name); !exists {
			return fmt.Errorf("alter user: %w", userNotFound(st.Name))
		}
		h, err := s.hash(ctx, st.Password)
		if err != nil {
			return err
		}
		_, err = s.cfg.Users.SetPassword(ctx, st.Name, h)
		return err
	case *catalog.DropUser:
		if st.Name == catalog.AdminUser {
			return fmt.Errorf("%w: the %s user cannot be dropped: change its password with ALTER USER", catalog.ErrInvalid, catalog.AdminUser)
		}
		_, err := s.cfg.Users.DropUser(ctx, st.Name, st.IfExists)
		return err
	}
	return nil
}

func userNotFound(name string) error {
	return fmt.Errorf("%w: user %q does not exist", catalog.ErrUserNotFound, name)
}

// Bootstrap makes sure the admin user exists: it creates it, a
// superuser, with password when there is none; when there is one and
// password is given and differs from the stored one, it sets it (so an
// operator who lost the admin password restarts the node with a new one;
// the admin's tokens are revoked then). With authentication required, no
// admin user and no password, it fails: the node would admit nobody.
func (s *Service) Bootstrap(ctx context.Context, password string) error {
	u, exists := s.cfg.Users.User(catalog.AdminUser)
	switch {
	case !exists && password == "" && s.cfg.Required:
		return fmt.Errorf("authentication is on and there is no %q user yet: give its password with --admin-password-file or LAKESTREAM_ADMIN_PASSWORD (there is no default password)", catalog.AdminUser)
	case !exists && password == "":
		return nil
	case !exists:
		h, err := s.hash(ctx, password)
		if err != nil {
			return fmt.Errorf("admin password: %w", err)
		}
		if _, _, err := s.cfg.Users.CreateUser(ctx, catalog.AdminUser, h, true, false); err != nil {
			return err
		}
		s.cfg.Logger.Info("admin user created")
		return nil
	case password == "":
		return nil
	}
	if ok, _ := s.check(ctx, password, u.PasswordHash); ok {
		return nil
	}
	h, err := s.hash(ctx, password)
	if err != nil {
		return fmt.Errorf("admin password: %w", err)
	}
	if _, err := s.cfg.Users.SetPassword(ctx, catalog.AdminUser, h); err != nil {
		return err
	}
	s.cfg.Logger.Warn("admin password reset to the configured one: the admin's earlier tokens are revoked")
	return nil
}
