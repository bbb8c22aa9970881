// Command peer is PocketBase, the service the outside probe of #51 set
// Stencil beside (docs/performance.md, "The peer"), with one command of
// its own: seed makes the collection loadbench reads and writes, as
// loadbench seeds Stencil's.
//
//	peer seed --dir D    # tickets: 100,000 records, one in 25 open, one in 5,000 rare
//	peer serve --dir D --http 127.0.0.1:PORT
//
// The collection has the index a team would give it for the reads
// measured, (status, created), and anyone may list and create its
// records, as the routes loadbench calls need no sign-in. The request
// log is off, as the probe ran it.
package main

import (
	"fmt"
	"log"

	"github.com/pocketbase/pocketbase"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"
	"github.com/spf13/cobra"
)

// records is how many tickets seed makes.
const records = 100_000

func main() {
	app := pocketbase.New()
	app.RootCmd.AddCommand(&cobra.Command{
		Use:   "seed",
		Short: "Make the tickets collection loadbench measures",
		RunE:  func(*cobra.Command, []string) error { return seed(app) },
	})
	if err := app.Start(); err != nil {
		log.Fatal(err)
	}
}

// seed makes the tickets collection and its records, the newest last
// (created one minute apart, as loadbench's records in Stencil), and
// turns the request log off.
func seed(app core.App) error {
	settings := app.Settings()
	settings.Logs.MaxDays = 0
	if err := app.Save(settings); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	tickets := core.NewBaseCollection("tickets")
	tickets.ListRule = types.Pointer("")
	tickets.ViewRule = types.Pointer("")
	tickets.CreateRule = types.Pointer("")
	tickets.Fields.Add(
		&core.TextField{Name: "status"},
		&core.NumberField{Name: "n"},
		&core.AutodateField{Name: "created", OnCreate: true},
		&core.AutodateField{Name: "updated", OnCreate: true, OnUpdate: true},
	)
	tickets.AddIndex("idx_tickets_status_created", false, "status, created", "")
	if err := app.Save(tickets); err != nil {
		return fmt.Errorf("collection: %w", err)
	}
	// Ids as PocketBase makes them: 15 characters of [a-z0-9].
	_, err := app.DB().NewQuery(fmt.Sprintf(`
		WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d)
		INSERT INTO tickets (id, status, n, created, updated)
		SELECT substr(lower(hex(randomblob(8))), 1, 15),
			CASE WHEN i %% 25 = 0 THEN 'open' WHEN i %% 5000 = 1 THEN 'rare' ELSE 'closed' END, i,
			strftime('%%Y-%%m-%%d %%H:%%M:%%fZ', '2026-01-01', '+' || i || ' minutes'),
			strftime('%%Y-%%m-%%d %%H:%%M:%%fZ', '2026-01-01', '+' || i || ' minutes')
		FROM s`, records)).Execute()
	if err != nil {
		return fmt.Errorf("records: %w", err)
	}
	_, err = app.DB().NewQuery("ANALYZE").Execute()
	return err
}
