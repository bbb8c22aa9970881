package authoring

import (
	"encoding/json"
	"strings"

	"stencil/schema"
)

// The values people save, as the API, the pages' forms and project files
// give them: their rules are their validate tags (Check).

// Project is a project's settings.
type Project struct {
	ID          string `json:"id" form:"id" validate:"required,project_id"`
	Name        string `json:"name" form:"name" validate:"required,max=100"`
	Description string `json:"description" form:"description" validate:"max=1000"`
	APIPath     string `json:"api_path" form:"api_path" validate:"required,api_path"`
	XRateLimit  *int   `json:"x_rate_limit" form:"x_rate_limit" validate:"omitnil,min=0,max=100000"`
	XRateBurst  *int   `json:"x_rate_burst" form:"x_rate_burst" validate:"omitnil,min=1,max=100000"`
	// CORSOrigins and EgressHosts: a JSON array, or a form's text of one
	// item a line.
	CORSOrigins *LineList `json:"x_cors_origins" form:"x_cors_origins"`
	EgressHosts *LineList `json:"x_egress_hosts" form:"x_egress_hosts"`
}

// Collection is a collection of a project. Fields and Additional are its
// schema (docs/collections.md), checked by Schema; a form gives none.
type Collection struct {
	ProjectID   string         `json:"project_id" form:"project_id" validate:"required"`
	ID          string         `json:"id" form:"id" validate:"required,project_id"`
	Name        string         `json:"name" form:"name" validate:"required,max=100"`
	Description string         `json:"description" form:"description" validate:"max=1000"`
	Fields      []schema.Field `json:"fields" form:"-"`
	Additional  *bool          `json:"additional" form:"-"`
}

// EmailTemplate is an email template of a project.
type EmailTemplate struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required,project_id"`
	Name      string `json:"name" form:"name" validate:"required,email_template"`
	Subject   string `json:"subject" form:"subject" validate:"required,max=200,one_line"`
	Text      string `json:"text" form:"text" validate:"required,max=65536"`
	HTML      string `json:"html" form:"html" validate:"max=262144"`
}

// LineList is a list setting of a project as given (CORS origins, egress
// hosts): a JSON array of strings, or a form's text of one item a line.
type LineList []string

func (o *LineList) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*o = list
	return nil
}

func (o *LineList) UnmarshalText(b []byte) error {
	*o = nil
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			*o = append(*o, line)
		}
	}
	return nil
}

// Check returns the list given as normal keeps it (runs.Origins,
// egress.Hosts), or keep when none was given; a list normal refuses is a
// Problem at field.
func (o *LineList) Check(field string, normal func([]string) ([]string, string, string), keep []string) ([]string, error) {
	if o == nil {
		return keep, nil
	}
	list, bad, problem := normal(*o)
	if bad != "" {
		problem = Quote(bad) + " " + problem
	}
	if problem != "" {
		return nil, &Problems{Fields: map[string]string{field: problem}}
	}
	return list, nil
}
