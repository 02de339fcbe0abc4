//go:build contract

package http_test

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	thttp "ticketd/http"
)

func TestOpenAPIValidatesAsOpenAPI31(t *testing.T) {
	for _, s := range []thttp.Surface{thttp.Developer, thttp.Storefront, thttp.Admin} {
		b, err := thttp.OpenAPIDocument(toyRoutes(), s, toyInfo)
		require.NoError(t, err)
		doc, err := openapi3.NewLoader().LoadFromData(b)
		require.NoError(t, err)
		require.True(t, doc.IsOpenAPI31OrLater())
		require.NoError(t, doc.Validate(context.Background()), "surface %d", s)
	}
}
