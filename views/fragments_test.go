package views

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFragments: a fragment is executed once per key, its HTML escaped as
// the template says; the store stays within its bytes; parsing the
// templates again (a development reload) forgets every fragment.
func TestFragments(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rows", "row.html")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string, at time.Time) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(file, at, at)
	}
	calls := 0
	funcs := map[string]any{"count": func() int { calls++; return calls }}
	write(`<td title="{{.}}">{{.}}</td>{{count}}`, time.Now().Add(-time.Hour))
	engine := Engine(true, dir, funcs)
	f := NewFragments(200)

	got, err := f.Render(engine, "rows/row", "a", `<a&"b>`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `<td title="&lt;a&amp;&#34;b&gt;">&lt;a&amp;&#34;b&gt;</td>1`; string(got) != want {
		t.Fatalf("first render %q, want %q", got, want)
	}
	again, _ := f.Render(engine, "rows/row", "a", "ignored: the key says it all")
	if again != got || calls != 1 {
		t.Fatalf("second render of the same key executed the template (%d calls): %q", calls, again)
	}
	// An empty key keeps nothing: each render executes the template.
	for range 2 {
		if _, err := f.Render(engine, "rows/row", "", "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, kept := f.m[""]; kept || calls != 3 {
		t.Fatalf("renders with an empty key: %d calls in all, kept %v", calls, kept)
	}

	// Many keys: the store keeps under its bound, and what it drops is
	// rendered again when asked.
	for i := range 20 {
		if _, err := f.Render(engine, "rows/row", fmt.Sprint("k", i), strings.Repeat("x", 20)); err != nil {
			t.Fatal(err)
		}
	}
	if f.size > f.max || f.size == 0 {
		t.Fatalf("store holds %d bytes, bound %d", f.size, f.max)
	}
	size := 0
	for k, v := range f.m {
		size += len(k) + len(v)
	}
	if size != f.size {
		t.Fatalf("store counts %d bytes, holds %d", f.size, size)
	}
	if _, err := f.Render(engine, "rows/row", "huge", strings.Repeat("x", 500)); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.m["huge"]; ok {
		t.Fatal("a fragment larger than the store was kept")
	}

	// A reload forgets what the old templates rendered.
	write(`<p>{{.}}</p>`, time.Now())
	time.Sleep(checkEvery + 50*time.Millisecond)
	got, err = f.Render(engine, "rows/row", "a", "new")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "<p>new</p>" {
		t.Fatalf("after the reload: %q", got)
	}
}
