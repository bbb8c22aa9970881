package runs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/flow"
	"stencil/store"
	"stencil/store/storetest"
	"stencil/vault"
	"stencil/vaultcrypt"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// testRuntime is the runtime on a fresh database holding project shop
// (api_path /shop) of user root, as main builds it but on one pool.
type testRuntime struct {
	*Service
	st      *store.Store
	pool    *pgxpool.Pool
	secrets *vault.Vault
	root    store.User
	logs    *bytes.Buffer
}

func newTestRuntime(t testing.TB) *testRuntime {
	t.Helper()
	pool := storetest.Pool(t)
	st := store.New(pool)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	keyring, err := vaultcrypt.NewKeyring([]vaultcrypt.Key{{ID: "k1", Secret: secret}})
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	secrets := vault.New(vault.Config{Store: st, Keyring: keyring, Versions: 10})
	svc := New(Config{Store: st, Reads: st, Tx: st, TxConns: 16, Vault: secrets, MailStatus: func() string { return store.EmailHeld },
		MailBacklog: 10_000, Concurrency: 256, Memory: 256 << 20, Log: slog.New(slog.NewTextHandler(logs, nil))})
	rt := &testRuntime{Service: svc, st: st, pool: pool, secrets: secrets, logs: logs}
	// A run's time limit is its own tests' to set (limits_test.go and the
	// contention and upstream tests set theirs). Elsewhere a minute: on a
	// fresh clone's loaded 2-core CI under -race, runs of the concurrency
	// tests passed the default 5 s in the queue and answered 503, which is
	// not what those tests check.
	rt.Limits.Time = time.Minute
	ctx := context.Background()
	rt.root = store.User{Username: "root", Email: "root@example.com", Role: store.RoleRoot, FirstName: "R", LastName: "Oot", PasswordHash: "x"}
	if err := st.CreateUser(ctx, &rt.root); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateProject(ctx, &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, rt.root.ID); err != nil {
		t.Fatal(err)
	}
	return rt
}

// collection makes a collection of project shop with records.
func (rt *testRuntime) collection(t *testing.T, id string, records ...string) {
	t.Helper()
	ctx := context.Background()
	if err := rt.st.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: id, Name: id}, rt.root.ID); err != nil {
		t.Fatal(err)
	}
	for _, rec := range records {
		if err := rt.st.CreateRecord(ctx, &store.Record{ProjectID: "shop", CollectionID: id, Data: []byte(rec)}); err != nil {
			t.Fatal(err)
		}
	}
}

// route saves a route of project shop, given as its document, and reloads
// the project's routes.
func (rt *testRuntime) route(t testing.TB, doc string) {
	t.Helper()
	r, problems := flow.DecodeRoute([]byte(doc), "route")
	if len(problems) > 0 {
		t.Fatalf("route document: %v", problems)
	}
	r.ProjectID = "shop"
	r.Normalize()
	if err := rt.st.CreateRoute(context.Background(), &store.StoredRoute{Route: r, CreatedBy: &rt.root.ID}); err != nil {
		t.Fatal(err)
	}
	if err := rt.RoutesChanged(context.Background(), "shop"); err != nil {
		t.Fatal(err)
	}
}

// vault puts key = value in project shop's vault.
func (rt *testRuntime) vault(t *testing.T, key, value string) {
	t.Helper()
	if _, err := rt.secrets.Create(context.Background(), "shop", key, value, store.VaultAccess{ProjectID: "shop", Key: key, UserID: &rt.root.ID, Channel: "api"}); err != nil {
		t.Fatal(err)
	}
}

// concurrently serves n requests made by req over clients goroutines and
// counts the answers by status.
func (rt *testRuntime) concurrently(t *testing.T, clients, n int, req func(i int) (method, path, body string)) map[int]int {
	t.Helper()
	return rt.concurrentlyTelling(t, clients, n, req, nil)
}

// concurrentlyTelling is concurrently telling answered, when not nil, of
// each answer's status (one call at a time). An error of Serve counts as
// the 500 the HTTP layer answers for it.
func (rt *testRuntime) concurrentlyTelling(t *testing.T, clients, n int, req func(i int) (method, path, body string), answered func(i, status int)) map[int]int {
	t.Helper()
	var mu sync.Mutex
	statuses := map[int]int{}
	next := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for i := range next {
				method, path, body := req(i)
				a, err := rt.Serve(context.Background(), Request{Method: method, Path: path, Body: []byte(body), Client: "127.0.0.1"})
				if err != nil {
					a.Status = 500 // the platform's error, as the HTTP layer answers it
				}
				mu.Lock()
				statuses[a.Status]++
				if answered != nil {
					answered(i, a.Status)
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return statuses
}

// records returns the data of a collection's records of project shop.
func (rt *testRuntime) records(t *testing.T, col string) []map[string]any {
	t.Helper()
	recs, err := rt.st.Records(context.Background(), "shop", col, nil, 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range recs {
		var m map[string]any
		if err := json.Unmarshal(r.Data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// Flow JSON shorthands.

func lit(rtype, data string) string {
	return fmt.Sprintf(`{"ref_var":false,"rtype":%q,"data":%q}`, rtype, data)
}

func ref(name string) string { return fmt.Sprintf(`{"ref_var":true,"rtype":"OTHER","data":%q}`, name) }

func cond(left, op, right string) string {
	return fmt.Sprintf(`{"left":%s,"right":%s,"condition_type":%q,"not":false,"next":"NONE"}`, left, right, op)
}

func pairsOf(kv ...string) string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, fmt.Sprintf(`{"id":%q,"data":%s}`, kv[i], kv[i+1]))
	}
	return "[" + strings.Join(out, ",") + "]"
}

// routeDoc is a route document of method and path with body fields and
// blocks.
func routeDoc(id, method, path, body string, blocks ...string) string {
	if body == "" {
		body = "[]"
	}
	return fmt.Sprintf(`{"route_id":%q,"route_path":%q,"method":%q,"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":%s,"flow":{"blocks":[%s]}}`,
		id, path, method, body, strings.Join(blocks, ","))
}

// counterBlocks read counter c, add 1 and write it back, answering the
// new count as n; between the read and the write, a LOOP of spin turns
// reads the counters again, one statement after the other.
var counterBlocks = []string{
	`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"counters","match":[{"id":"name","data":` + lit("STRING", "c") + `}],"limit":` + lit("INTEGER", "1") + `}`,
	`{"type":"ASSIGNMENT","depth":0,"local_name":"next","conditions":[],"operations":[{"left":` + ref("rows.0.n") + `,"right":` + lit("INTEGER", "1") + `,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`,
	`{"type":"LOOP","depth":0,"local_name":"i","min":` + lit("INTEGER", "0") + `,"max":` + ref("spin") + `}`,
	`{"type":"FETCH","depth":1,"local_name":"again","ref_col":"counters","limit":` + lit("INTEGER", "1") + `}`,
	`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"counters","ref_property":"n","save":true,"targets":[{"field":"name","value":` + lit("STRING", "c") + `}],"set":` + ref("next") + `}`,
	`{"type":"RETURN","depth":0,"pairs":` + pairsOf("n", ref("next")) + `,"conditions":[]}`,
}
