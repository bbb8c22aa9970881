package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"stencil/store/storetest"
)

// apiCall sends a JSON request with a bearer token and returns the status
// and body.
func apiCall(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// floodRoutes are the routes of the flood: /hog keeps a new 2 MiB string
// each turn of a LOOP (1.94 GB for one call before runs had a memory
// limit), /all reads every record of an 80 MB collection (5 GB for 200
// calls before).
var floodRoutes = []string{
	`{"route_id":"hog","route_path":"/hog","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"ASSIGNMENT","depth":0,"local_name":"s","conditions":[],"operations":[{"left":{"ref_var":false,"rtype":"STRING","data":"x"},"right":{"ref_var":false,"rtype":"STRING","data":""},"operation_type":"ADDITION","not":false,"next":"NONE"}]},
		{"type":"LOOP","depth":0,"local_name":"d","min":{"ref_var":false,"rtype":"INTEGER","data":"0"},"max":{"ref_var":false,"rtype":"INTEGER","data":"21"},"step":{"ref_var":false,"rtype":"INTEGER","data":"1"}},
		{"type":"ASSIGNMENT","depth":1,"local_name":"s","conditions":[],"operations":[{"left":{"ref_var":true,"rtype":"OTHER","data":"s"},"right":{"ref_var":true,"rtype":"OTHER","data":"s"},"operation_type":"ADDITION","not":false,"next":"NONE"}]},
		{"type":"OBJECT","depth":0,"local_name":"chain","pairs":[]},
		{"type":"LOOP","depth":0,"local_name":"i","min":{"ref_var":false,"rtype":"INTEGER","data":"0"},"max":{"ref_var":false,"rtype":"INTEGER","data":"100000"},"step":{"ref_var":false,"rtype":"INTEGER","data":"1"}},
		{"type":"ASSIGNMENT","depth":1,"local_name":"t","conditions":[],"operations":[{"left":{"ref_var":true,"rtype":"OTHER","data":"s"},"right":{"ref_var":true,"rtype":"OTHER","data":"i"},"operation_type":"ADDITION","not":false,"next":"NONE"}]},
		{"type":"OBJECT","depth":1,"local_name":"chain","pairs":[{"id":"next","data":{"ref_var":true,"rtype":"OTHER","data":"chain"}},{"id":"text","data":{"ref_var":true,"rtype":"OTHER","data":"t"}}]}]}}`,
	`{"route_id":"all","route_path":"/all","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"big"},
		{"type":"PROPERTY","depth":0,"local_name":"n","data":{"ref_var":true,"rtype":"OTHER","data":"rows"},"apply":"LENGTH","additional":""},
		{"type":"RETURN","depth":0,"pairs":[{"id":"n","data":{"ref_var":true,"rtype":"OTHER","data":"n"}}],"conditions":[]}]}}`,
}

// TestRunFloodMemory: each flood route alone meets its run's memory limit;
// then 200 anonymous calls at once of each, each answered by one of its
// run's limits or busy: the memory limit, or on a machine too loaded to
// read that far within the run's time, the time limit.
// The service's peak resident memory stays under 512 MiB (each run holds
// at most 64 MiB of values, runs share 256 MiB, and runs past the cap on
// runs under way are answered 503), and /healthz and another project's
// vault read answer all the while: each one, not stuck behind the flood
// (under 5 s; the slowest is logged — how fast is the benchmarks' to
// say, not a test's on a shared machine: 1,118 ms was seen on a slow day).
func TestRunFloodMemory(t *testing.T) {
	url := storetest.URL(t)
	c := startChild(t, map[string]string{"DATABASE_URL": url,
		"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"}, 0)
	status, body := apiCall(t, "POST", c.URL+"/user/login", "", `{"auth_data":"root","password":"root-password-1"}`)
	var login struct {
		JWT string `json:"jwt"`
	}
	if err := json.Unmarshal([]byte(body), &login); status != 200 || err != nil || login.JWT == "" {
		t.Fatalf("login: %d %s", status, body)
	}
	tok := login.JWT
	for _, call := range [][3]string{
		{"POST", "/project/create", `{"id":"flood","name":"Flood","api_path":"/flood","x_rate_limit":0}`},
		{"POST", "/project/create", `{"id":"other","name":"Other","api_path":"/other"}`},
		{"POST", "/collection/create", `{"project_id":"flood","id":"big","name":"Big"}`},
		{"POST", "/vault/create", `{"project_id":"other","key":"API_KEY","value":"other-secret"}`},
		{"POST", "/route/create", `{"project_id":"flood","route":` + floodRoutes[0] + `}`},
		{"POST", "/route/create", `{"project_id":"flood","route":` + floodRoutes[1] + `}`},
	} {
		if status, body := apiCall(t, call[0], c.URL+call[1], tok, call[2]); status != 201 {
			t.Fatalf("%s %s: %d %s", call[0], call[1], status, body)
		}
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	// 10,000 records of 8 KB each, not compressible: 80 MB to read.
	_, err = conn.Exec(context.Background(), `INSERT INTO records (project_id, collection_id, data)
		SELECT 'flood', 'big', jsonb_build_object('n', i, 'text', string_agg(md5(i::text || '.' || j::text), ''))
		FROM generate_series(1, 10000) i, generate_series(1, 250) j GROUP BY i`)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// Alone, each route meets its run's memory limit. In the flood below
	// which of them runs and which is turned away busy depends on the
	// machine's speed; that each that runs stops at its limit does not.
	for _, route := range []string{"hog", "all"} {
		if status, body := apiCall(t, "GET", c.URL+"/x/flood/"+route, "", ""); status != 500 || !strings.Contains(body, "memory limit of 64 MiB") {
			t.Fatalf("%s alone: %d %.300s", route, status, body)
		}
	}

	stop := make(chan struct{})
	var worst atomic.Int64 // the slowest probe, in milliseconds
	var probes sync.WaitGroup
	probes.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for _, path := range []string{"/healthz", "/vault/fetch/one?project_id=other&key=API_KEY"} {
				start := time.Now()
				status, body := apiCall(t, "GET", c.URL+path, tok, "")
				took := time.Since(start).Milliseconds()
				if status != 200 {
					t.Errorf("%s during the flood: %d %s", path, status, body)
				}
				if took > worst.Load() {
					worst.Store(took)
				}
			}
		}
	})
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]int{}
	samples := map[string]string{} // an answer's body for each key
	for i := range 400 {
		route := [...]string{"hog", "all"}[i%2]
		wg.Go(func() {
			resp, err := (&http.Client{Timeout: 60 * time.Second}).Get(c.URL + "/x/flood/" + route)
			if err != nil {
				t.Error(err)
				return
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			key := fmt.Sprintf("%s %d", route, resp.StatusCode)
			switch {
			case resp.StatusCode != 500:
			case strings.Contains(string(raw), "memory limit of 64 MiB"):
				key += " memory limit"
			case strings.Contains(string(raw), "time limit of 5s"):
				key += " time limit"
			}
			mu.Lock()
			answers[key]++
			samples[key] = string(raw)
			mu.Unlock()
		})
	}
	wg.Wait()
	close(stop)
	probes.Wait()
	peak := c.peakRSS(t)
	t.Logf("answers %v; peak RSS %d MiB; slowest probe %d ms", answers, peak, worst.Load())
	for key := range answers {
		if !strings.HasSuffix(key, " limit") && !strings.HasSuffix(key, " 503") {
			t.Errorf("an answer neither a run's limit nor busy: %s %.300s", key, samples[key])
		}
	}
	if peak > 512 {
		t.Errorf("peak RSS %d MiB under the flood, over 512 MiB", peak)
	}
	if worst.Load() > 5000 {
		t.Errorf("a probe took %d ms during the flood: stuck behind it", worst.Load())
	}
}
