package runs

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRuntimeImportsNoHTTPLayer: the runtime depends on neither the
// handlers nor Fiber (docs/architecture.md): imports point down.
func TestRuntimeImportsNoHTTPLayer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "stencil/handlers" || strings.Contains(dep, "gofiber") || strings.Contains(dep, "valyala/fasthttp") {
			t.Errorf("runs depends on %s", dep)
		}
	}
}
