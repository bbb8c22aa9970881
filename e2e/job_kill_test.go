package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestJobSurvivesKill: the instance running a job is killed (SIGKILL)
// while the job's route waits for its upstream, its record created but not
// committed. Another instance takes the job back (JOB_RESCUE) and runs it
// again: the route's record is written once, and the upstream gets both
// attempts' requests with one Idempotency-Key (docs/jobs.md).
func TestJobSurvivesKill(t *testing.T) {
	// Mostly waiting for the rescue: it runs beside the journeys.
	t.Parallel()
	var mu sync.Mutex
	var keys []string
	held := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		first := len(keys) == 1
		mu.Unlock()
		if first {
			close(held)
			<-r.Context().Done() // the instance that sent it dies first
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer up.Close()
	url, db := seededDB(t)
	vars := map[string]string{"DATABASE_URL": url, "ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com",
		"JOB_RESCUE": "15s", "EGRESS_ALLOW": up.Listener.Addr().String()}
	first := startChild(t, vars, 0)
	token := apiLogin(t, first.URL, "root", "root-password-1")
	for _, call := range [][2]string{
		{"/project/create", `{"id":"shop","name":"Shop","api_path":"/shop"}`},
		{"/collection/create", `{"project_id":"shop","id":"charges","name":"Charges"}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"charge","route_path":"/charge","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[` +
			`{"type":"OBJECT","depth":0,"local_name":"c","pairs":[{"id":"amount","data":{"ref_var":false,"rtype":"INTEGER","data":"5"}}]},` +
			`{"type":"CREATE","depth":0,"ref_col":"charges","ref_object":"c","save":true,"conditions":[]},` +
			`{"type":"HTTP","depth":0,"local_name":"res","method":"POST","url":{"ref_var":false,"rtype":"STRING","data":"` + up.URL + `/charge"},"query":[],"headers":[],"body":null,"timeout_ms":null,"conditions":[]},` +
			`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"start","route_path":"/start","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[` +
			`{"type":"ENQUEUE","depth":0,"route_id":"charge","query":[],"body":null,"delay_ms":null,"max_attempts":5,"conditions":[],"local_name":"job"}]}}}`},
	} {
		if status, body := api(t, "POST", first.URL+call[0], token, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	if status, body := api(t, "POST", first.URL+"/x/shop/start", "", ""); status != 200 {
		t.Fatalf("start: %d %s", status, body)
	}
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the job's route never called its upstream")
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.done
	startChild(t, vars, 0)
	ctx := context.Background()
	var state string
	var attempts int
	for deadline := time.Now().Add(120 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if err := db.QueryRow(ctx, "SELECT state, attempt FROM river_job WHERE kind = 'route'").Scan(&state, &attempts); err != nil {
			t.Fatal(err)
		}
		if state == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job is %s after %d attempts, 120 s after the kill", state, attempts)
		}
	}
	var records int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM records WHERE project_id = 'shop' AND collection_id = 'charges'").Scan(&records); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if records != 1 || attempts != 2 || len(keys) != 2 || keys[0] != keys[1] || keys[0] == "" {
		t.Fatalf("%d records, %d attempts, upstream keys %q", records, attempts, keys)
	}
}
