package store

import (
	"context"
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"
)

// vaultListings keeps masked pages of vault entries (every column but the
// sealed value) by project, vault version and page. A version is never
// reused, and a page is kept only under a version read before its query
// ran, so what a reader gets under the version it read is at least as new
// as that version: every instance serves its own writes and everyone
// else's as soon as a request reads the new version.
type vaultListings = lru.Cache[vaultListingKey, vaultListing]

type vaultListingKey struct {
	project string
	version int64
	page    Page
}

type vaultListing struct {
	entries []VaultEntry // never changed once kept
	total   int
}

// vaultListingsKept bounds the pages kept: at most 100 entries each, a
// few hundred bytes an entry.
const vaultListingsKept = 512

func newVaultListings() *vaultListings {
	c, err := lru.New[vaultListingKey, vaultListing](vaultListingsKept)
	if err != nil {
		panic(err) // only for a size below one
	}
	return c
}

// VaultListing returns a page of p's entries without their sealed values,
// as ListVaultEntries does without logging, and their number. p must carry
// the vault version the request read (a Caller's project does): a page
// read before at that version comes from memory. In a transaction it is
// always read, so that the transaction sees its own writes.
func (s *Store) VaultListing(ctx context.Context, p Project, page Page) (_ []VaultEntry, _ int, err error) {
	defer wrap(&err, "vault listing")
	key := vaultListingKey{project: p.ID, version: p.VaultVersion, page: page}
	kept := !inTransaction(s.db)
	if kept {
		if l, ok := s.listings.Get(key); ok {
			return slices.Clone(l.entries), l.total, nil
		}
	}
	entries, total, err := s.ListVaultEntries(ctx, p.ID, page, nil)
	if err != nil {
		return nil, 0, err
	}
	for i := range entries {
		entries[i].Sealed = nil
	}
	if kept && p.VaultVersion > 0 {
		s.listings.Add(key, vaultListing{entries: slices.Clone(entries), total: total})
	}
	return entries, total, nil
}
