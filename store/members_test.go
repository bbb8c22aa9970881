package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"stencil/store"
	"stencil/store/storetest"
)

// TestMigrationKeepsMembersRights: migration 056 gives each membership its
// user's role (a ROOT user's reads ADMIN), so every member works in each
// project with the role they had before (docs/roles.md).
func TestMigrationKeepsMembersRights(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, conn := migratedTo(t, 55)
	if _, err := conn.Exec(ctx, `INSERT INTO users (username, email, password_hash, role) VALUES
			('root', 'r@example.com', 'x', 'ROOT'), ('ana', 'a@example.com', 'x', 'ADMIN'),
			('bob', 'b@example.com', 'x', 'AUTHOR'), ('cyd', 'c@example.com', 'x', 'VIEWER');
		INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop'), ('blog', 'Blog', '/blog');
		INSERT INTO project_members (project_id, user_id) SELECT p.id, u.id FROM projects p CROSS JOIN users u`); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	st := store.New(storetest.PoolOn(t, url))
	for _, project := range []string{"shop", "blog"} {
		members, err := st.Members(ctx, project)
		if err != nil {
			t.Fatal(err)
		}
		if len(members) != 4 {
			t.Fatalf("%s has %d members after the migration, want 4", project, len(members))
		}
		for _, mb := range members {
			if mb.Effective() != mb.UserRole || mb.Role != store.MembershipRole(mb.UserRole) {
				t.Errorf("%s in %s: membership %s, works as %s; was %s", mb.Username, project, mb.Role, mb.Effective(), mb.UserRole)
			}
		}
	}
	if _, err := conn.Exec(ctx, "INSERT INTO project_members (project_id, user_id, role) VALUES ('shop', 1, 'ROOT')"); err == nil {
		t.Fatal("a membership took the role ROOT")
	}
}

// memberStore is a store with project shop whose members ana and bob are
// ADMIN accounts with ADMIN memberships, and cyd a VIEWER account.
func memberStore(t *testing.T) (*store.Store, context.Context, map[string]store.User) {
	t.Helper()
	ctx := context.Background()
	st := store.New(storetest.Pool(t))
	users := map[string]store.User{}
	for _, u := range []store.User{{Username: "ana", Role: store.RoleAdmin}, {Username: "bob", Role: store.RoleAdmin}, {Username: "cyd", Role: store.RoleViewer}} {
		u.Email, u.PasswordHash = u.Username+"@example.com", "x"
		if err := st.CreateUser(ctx, &u); err != nil {
			t.Fatal(err)
		}
		users[u.Username] = u
	}
	p := store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}
	if err := st.CreateProject(ctx, &p, users["ana"].ID); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bob", "cyd"} {
		if err := st.AddMember(ctx, "shop", users[name].ID, store.RoleAdmin); err != nil {
			t.Fatal(err)
		}
	}
	return st, ctx, users
}

// TestSetMemberRole: a membership's role is set and read back with the
// role its account's caps it to; one who is not a member is ErrNotFound;
// the project's last ADMIN is not lowered or removed.
func TestSetMemberRole(t *testing.T) {
	t.Parallel()
	st, ctx, users := memberStore(t)
	cy, err := st.SetMemberRole(ctx, "shop", users["cyd"].ID, store.RoleAuthor)
	if err != nil {
		t.Fatal(err)
	}
	if cy.Role != store.RoleAuthor || cy.Effective() != store.RoleViewer {
		t.Fatalf("cy: membership %s, works as %s; want AUTHOR, VIEWER", cy.Role, cy.Effective())
	}
	if _, err := st.SetMemberRole(ctx, "shop", 999, store.RoleAuthor); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a user who is not a member: %v, want ErrNotFound", err)
	}
	if _, err := st.SetMemberRole(ctx, "shop", users["bob"].ID, store.RoleViewer); err != nil {
		t.Fatal(err)
	}
	// cyd's ADMIN membership makes no manager: the account is VIEWER.
	if _, err := st.SetMemberRole(ctx, "shop", users["cyd"].ID, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetMemberRole(ctx, "shop", users["ana"].ID, store.RoleAuthor); !errors.Is(err, store.ErrLastAdmin) {
		t.Fatalf("lowering the last ADMIN: %v, want ErrLastAdmin", err)
	}
	if err := st.RemoveMember(ctx, "shop", users["ana"].ID); !errors.Is(err, store.ErrLastAdmin) {
		t.Fatalf("removing the last ADMIN: %v, want ErrLastAdmin", err)
	}
	members, err := st.Members(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, m := range members {
		got += fmt.Sprintf("%s:%s/%s ", m.Username, m.Role, m.Effective())
	}
	if want := "ana:ADMIN/ADMIN bob:VIEWER/VIEWER cyd:ADMIN/VIEWER "; got != want {
		t.Fatalf("members %q, want %q", got, want)
	}
}

// TestLastAdminUnderConcurrency: two ADMINs lowering each other (or
// removing each other) at once cannot leave the project without one:
// exactly one of each pair passes, every round.
func TestLastAdminUnderConcurrency(t *testing.T) {
	t.Parallel()
	st, ctx, users := memberStore(t)
	ana, bo := users["ana"].ID, users["bob"].ID
	for round := range 20 {
		var passed, refused atomic.Int32
		storetest.AtOnce(t, 2, func(i int) error {
			target := []int64{ana, bo}[i]
			var err error
			if round%2 == 0 {
				_, err = st.SetMemberRole(ctx, "shop", target, store.RoleAuthor)
			} else {
				err = st.RemoveMember(ctx, "shop", target)
			}
			switch {
			case err == nil:
				passed.Add(1)
			case errors.Is(err, store.ErrLastAdmin):
				refused.Add(1)
			default:
				return err
			}
			return nil
		})
		if passed.Load() != 1 || refused.Load() != 1 {
			t.Fatalf("round %d: %d passed and %d were refused, want 1 and 1", round, passed.Load(), refused.Load())
		}
		// Both ADMIN members again for the next round.
		for _, id := range []int64{ana, bo} {
			if _, err := st.SetMemberRole(ctx, "shop", id, store.RoleAdmin); errors.Is(err, store.ErrNotFound) {
				err = st.AddMember(ctx, "shop", id, store.RoleAdmin)
				if err != nil {
					t.Fatal(err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
}
