// Package migrations holds the SQL migrations, applied in file-name order
// (NNN_name.sql) at start under a PostgreSQL advisory lock.
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
