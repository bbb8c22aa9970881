// Package migrations holds the SQL migrations, applied in file-name order
// (NNN_name.sql) at start under a PostgreSQL advisory lock. A migration that
// shipped is never edited: a change is a new file.
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
