package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The peer (docs/performance.md, "The peer"): PocketBase, the service the
// outside probe of #51 set Stencil beside, built from loadbench/peer into
// bin/peer by make bench. Its rows: the newest 20 records of a common
// value and of a rare one read one at a time — Stencil's collection with
// status an indexed field (docs/collections.md), PocketBase's with an index on
// (status, created), each the index a team would give the read — and
// one record created at 16 and at 64 connections, PocketBase's request
// log off as the probe ran it.

// peerValues are the values read one at a time: the newest 20 of 4,000
// matches and of 20 (seeded alike on both sides, as loadbench seeds the
// untyped tickets).
var peerValues = []struct{ value, what string }{{"open", "4,000"}, {"rare", "20"}}

// seedPeerTwin makes Stencil's side of the peer's reads: the collection
// tickets_indexed, status an indexed field, with 100,000 records by SQL,
// and the routes GET /x/bench/indexed/<value>, the newest 20 of a value.
func (b *bench) seedPeerTwin(ctx context.Context, operand func(bool, string, string) string) error {
	body := `{"project_id":"bench","id":"tickets_indexed","name":"Tickets","fields":[{"name":"status","type":"text","indexed":true},{"name":"n","type":"integer"}]}`
	if _, err := b.must(201, "POST", "/collection/create", b.jwt, body); err != nil {
		return err
	}
	for _, v := range peerValues {
		route := `{"project_id":"bench","route":{"route_id":"indexed_` + v.value + `","route_path":"/indexed/` + v.value + `","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"tickets_indexed","match":[{"id":"status","data":` + operand(false, "STRING", v.value) + `}],"sort":{"property":"_id","descending":true},"limit":` + operand(false, "INTEGER", "20") + `},
		{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":` + operand(true, "ARRAY", "rows") + `}],"conditions":[]}]}}}`
		if _, err := b.must(201, "POST", "/route/create", b.jwt, route); err != nil {
			return err
		}
	}
	return b.seedRecords(ctx, `INSERT INTO records (project_id, collection_id, data)
		SELECT 'bench', 'tickets_indexed', jsonb_build_object('status', CASE WHEN i % 25 = 0 THEN 'open' WHEN i % 5000 = 1 THEN 'rare' ELSE 'closed' END, 'n', i)
		FROM generate_series(1, 100000) AS i`)
}

// startPeer seeds the peer's data directory and serves it on a free
// loopback port: its base URL, and how to stop it.
func (b *bench) startPeer(ctx context.Context) (base string, stop func(), err error) {
	if _, err := os.Stat(b.peer); err != nil {
		return "", nil, fmt.Errorf("the peer's binary: %w (make peer builds it)", err)
	}
	dir := filepath.Join(b.work, "peer")
	if out, err := exec.CommandContext(ctx, b.peer, "seed", "--dir", dir).CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("peer seed: %v: %s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(b.peer, "serve", "--dir", dir, "--http", addr)
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	base = "http://" + addr
	if answersOK(base+"/api/health", 30*time.Second, 100*time.Millisecond) {
		return base, stop, nil
	}
	stop()
	return "", nil, errors.New("the peer did not answer /api/health within 30 s")
}

// peerLoads measures Stencil's rows beside the peer's.
func (b *bench) peerLoads(ctx context.Context, add func(result, *result, string, bool)) error {
	base, stop, err := b.startPeer(ctx)
	if err != nil {
		return err
	}
	defer stop()
	conns := b.conns
	defer func() { b.conns = conns }()
	b.conns = 1
	for _, v := range peerValues {
		read, peer, err := alternate(b.rounds, func() (result, error) {
			return b.wrk(fmt.Sprintf("GET /x/… (newest 20 of %s, status indexed, 1 conn)", v.what), "/x/bench/indexed/"+v.value, "Accept: application/json")
		}, func() (result, error) {
			return b.wrk("PocketBase, the same read (index on status, created)",
				base+"/api/collections/tickets/records?filter=(status='"+v.value+"')&sort=-created&perPage=20&skipTotal=1", "Accept: application/json")
		})
		if err != nil {
			return err
		}
		add(read, peer, "≥ 1", read.rps >= peer.rps && read.errors == 0 && peer.errors == 0)
	}
	for _, n := range []int{16, 64} {
		b.conns = n
		create, peer, err := alternate(b.rounds, func() (result, error) {
			return b.wrkMethod(fmt.Sprintf("POST /x/… (CREATE one record, %d conns)", n), "POST", "/x/bench/add", "Accept: application/json")
		}, func() (result, error) {
			return b.wrkBody("PocketBase, a record created (request log off)", "POST", base+"/api/collections/tickets/records", `{"status":"open","n":1}`, "Accept: application/json")
		})
		if err != nil {
			return err
		}
		// The goal is this ratio at 1, or the pgbench row's
		// above at 0.5 (docs/performance.md, "The peer").
		add(create, peer, "(or ≥ 0.5 × pgbench)", create.errors == 0 && peer.errors == 0)
	}
	return nil
}
