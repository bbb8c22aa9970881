package authoring_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"stencil/authoring"
	"stencil/store"
	"stencil/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// TestCheckNamesFields: a rule broken is named by the field's JSON path,
// under a prefix for a project file's object; a required field not given
// at all makes the Problems Missing, one given empty does not.
func TestCheckNamesFields(t *testing.T) {
	var p *authoring.Problems
	err := authoring.CheckAt("collections[2].", &authoring.Collection{ProjectID: "shop", ID: "Bad id", Name: ""})
	if !errors.As(err, &p) || p.Fields["collections[2].id"] == "" || p.Fields["collections[2].name"] != "must not be empty" || p.Missing {
		t.Fatalf("%v %+v", err, p)
	}
	err = authoring.Check(&authoring.EmailTemplate{ProjectID: "shop", Name: "order_done", Subject: "s"}, func(string) bool { return false })
	if !errors.As(err, &p) || !p.Missing || p.Error() != "text is required" {
		t.Fatalf("%v %+v", err, p)
	}
	if ok, msg := authoring.Rule("vault_key"); ok("lower") || msg == "" {
		t.Fatal("the vault key rule")
	}
}

// TestApplyNamesItsPlan: a file planned for a new project is applied only
// under the plan's id; another id is ErrPlanStale and creates nothing.
func TestApplyNamesItsPlan(t *testing.T) {
	ctx := context.Background()
	st := store.New(storetest.Pool(t))
	u := store.User{Username: "ada", Email: "ada@example.com", Role: store.RoleAdmin, FirstName: "A", LastName: "Da", PasswordHash: "x"}
	if err := st.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"format":1,"id":"shop","name":"Shop","collections":[{"id":"books","name":"Books","description":""}],"vault_keys":["API_KEY"]}`)
	fp, err := authoring.PlanFile(ctx, st, "shop", doc, false)
	if err != nil || fp.Have != nil || len(fp.Plan.Add) == 0 || len(fp.PlanID) != 64 {
		t.Fatalf("plan: %+v %v", fp.Plan, err)
	}
	if _, err := authoring.Apply(ctx, st, "shop", doc, false, fp.PlanID[1:]+"0", u.ID); !errors.Is(err, authoring.ErrPlanStale) {
		t.Fatalf("another plan id: %v", err)
	}
	if _, err := st.ProjectContents(ctx, "shop", false); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a stale apply made the project: %v", err)
	}
	if _, err := authoring.Apply(ctx, st, "shop", doc, false, fp.PlanID, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Collection(ctx, "shop", "books"); err != nil {
		t.Fatalf("applied: %v", err)
	}
	if _, err := authoring.PlanFile(ctx, st, "shop", []byte(`{"format":1,"vault_keys":["lower"]}`), false); err == nil {
		t.Fatal("a vault key that breaks the rule was planned")
	}
}

// TestRecordData: typed data's faults name the field and where the JSON
// breaks; a body's data that is no object stays a wrong parameter.
func TestRecordData(t *testing.T) {
	for _, c := range []struct {
		raw   string
		typed bool
		want  string
	}{
		{`{"a": 1}`, true, ""},
		{"{\n  \"a\": 1,\n  \"b\": }", true, "data is not valid JSON: look at line 3, column 8"},
		{`{"a": 1`, true, "data is not valid JSON: look at line 1, column 7"},
		{`[1]`, true, "data must be a JSON object"},
		{`[1]`, false, store.ErrRecordNotObject.Error()},
		{`{"n": 1e400}`, true, "data"},
	} {
		_, err := authoring.RecordData([]byte(c.raw), c.typed)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.raw, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s (typed %v): %v, want %q", c.raw, c.typed, err, c.want)
		}
	}
}

// TestSaveNote: a save's note is taken out of the document, within its
// rules.
func TestSaveNote(t *testing.T) {
	doc := map[string]any{"name": "x", "note": "fixed the filter"}
	if note, err := authoring.SaveNote(doc); err != nil || note != "fixed the filter" || doc["note"] != nil {
		t.Fatalf("%q %v %v", note, err, doc)
	}
	for _, bad := range []any{3, strings.Repeat("n", 501), "a\x07b"} {
		if _, err := authoring.SaveNote(map[string]any{"note": bad}); authoring.AsProblems(err) == nil || authoring.AsProblems(err).Fields["note"] == "" {
			t.Errorf("note %q: %v", bad, err)
		}
	}
}
