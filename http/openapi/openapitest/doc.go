// Package openapitest is the contract-test harness of the black-box HTTP
// suites. A Client talks to a live server over real HTTP (net/http) and checks every
// exchange against the server's own OpenAPI documents with kin-openapi: the
// request (unless a test means to send a bad one) and always the response:
// its status must be documented for the operation, its documented headers
// well-formed, its body valid for the schema. A request to a path or method
// the documents do not describe fails the test. So an endpoint whose
// behaviour drifts from its documentation fails `go test`.
//
// # Concurrency
//
// A Client and its copies (WithKey, WithHeader, WithT) may be used from
// parallel subtests; the loaded documents are cached per server for the
// test binary behind one mutex, and each server is loaded once.
package openapitest
