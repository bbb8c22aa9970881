package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// lighthousePages are the pages whose Lighthouse scores README.md reports:
// the sign-in page (signed out), and as ROOT the start page, a project's
// page (its members' roles), the vault, the template list, the editor (of
// a new template and of a route), the playground, a collection's records,
// the run log, the analytics and the page that applies a project file.
var lighthousePages = []struct {
	name, path string
	signedIn   bool
}{
	{"sign-in", "/web/login", false},
	{"home", "/", true},
	{"project", "/web/project?id=bench", true},
	{"vault", "/web/vault?project_id=bench", true},
	{"template list", "/web/routes/templates", true},
	{"template editor", "/web/routes/templates/create", true},
	{"route editor", "/web/routes/edit?project_id=bench&route_id=sf_books", true},
	{"playground", "/web/routes/try?project_id=bench&route_id=sf_books", true},
	{"records", "/web/data/collection?project_id=bench&id=books", true},
	{"run log", "/web/routes/runs?project_id=bench", true},
	{"analytics", "/web/routes/stats?project_id=bench", true},
	{"apply a file", "/web/project/apply?project_id=bench", true},
}

// lighthouse audits each page with Lighthouse's mobile settings (its
// default: a mid-range phone on a throttled network) in Chromium and prints
// the category scores.
func (b *bench) lighthouse(bin string) error {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		return fmt.Errorf("lighthouse needs Chromium: %w", err)
	}
	fmt.Println("Lighthouse (mobile), scores out of 100:")
	fmt.Printf("  %-16s %13s %11s %14s %9s %8s %8s %6s\n", "page", "accessibility", "performance", "best practices", "SEO", "LCP ms", "TBT ms", "CLS")
	for _, p := range lighthousePages {
		headers := "{}"
		if p.signedIn {
			raw, _ := json.Marshal(map[string]string{"Cookie": b.cookie})
			headers = string(raw)
		}
		out := filepath.Join(b.work, "lighthouse.json")
		cmd := exec.Command(bin, b.base+p.path, "--quiet", "--output=json", "--output-path="+out,
			"--only-categories=accessibility,performance,best-practices,seo", "--extra-headers="+headers,
			"--chrome-flags=--headless=new --no-sandbox --disable-gpu --disable-background-networking --disable-component-update --disable-sync --no-first-run")
		cmd.Env = append(os.Environ(), "CHROME_PATH="+chromium)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("lighthouse %s: %w", p.path, err)
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		var report struct {
			FinalDisplayedURL string `json:"finalDisplayedUrl"`
			Categories        map[string]struct {
				Score *float64 `json:"score"`
			} `json:"categories"`
			Audits map[string]struct {
				NumericValue float64 `json:"numericValue"`
			} `json:"audits"`
		}
		if err := json.Unmarshal(raw, &report); err != nil {
			return err
		}
		if report.FinalDisplayedURL != b.base+p.path {
			return fmt.Errorf("lighthouse %s ended at %s (not signed in?)", p.path, report.FinalDisplayedURL)
		}
		score := func(c string) string {
			if s := report.Categories[c].Score; s != nil {
				return fmt.Sprintf("%.0f", *s*100)
			}
			return "–"
		}
		// What performance is made of: the largest paint, the main thread
		// blocked, the layout's shifts (Lighthouse's simulated phone).
		fmt.Printf("  %-16s %13s %11s %14s %9s %8.0f %8.0f %6.3f\n", p.name, score("accessibility"), score("performance"), score("best-practices"), score("seo"),
			report.Audits["largest-contentful-paint"].NumericValue, report.Audits["total-blocking-time"].NumericValue, report.Audits["cumulative-layout-shift"].NumericValue)
	}
	return nil
}
