module stencilclient

go 1.24

require github.com/oapi-codegen/runtime v1.2.0

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.5.0 // indirect
)
