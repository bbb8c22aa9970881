package views

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatchedReloadsOnChange: in development a changed view file shows on
// the next render after the check interval, without a restart.
func TestWatchedReloadsOnChange(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "home", "index.html")
	if err := os.MkdirAll(filepath.Dir(page), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(s string, at time.Time) {
		if err := os.WriteFile(page, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(page, at, at)
	}
	var engine Renderer
	render := func() string {
		var b bytes.Buffer
		if err := engine.Render(&b, "home/index", nil); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	write("first", time.Now().Add(-time.Hour))
	engine = Engine(true, dir, nil)
	if r, ok := engine.(*renderer); !ok || r.watch == nil {
		t.Fatalf("development engine is %T", engine)
	}
	if got := render(); got != "first" {
		t.Fatalf("got %q", got)
	}
	write("second", time.Now())
	time.Sleep(checkEvery + 50*time.Millisecond)
	if got := render(); got != "second" {
		t.Fatalf("after the change: %q", got)
	}
}
