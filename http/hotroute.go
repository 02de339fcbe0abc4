package http

import (
	"strings"
	"unsafe"

	"github.com/valyala/fasthttp"

	"ticketd/http/bind"
)

// Hot routes (Route.Hot): a drop's busiest routes are matched ahead of the
// router. fasthttp/router hands each path parameter over as a copied
// string in a fresh one-element slice, boxed into the request's user
// values: three allocations a parameter, on every order, join and poll.
// Here a hot route's pattern is compared segment by segment with the raw
// path (the router's PathOriginal) and its parameters are copied once into
// the Ctx; Ctx.Param reads them there.
//
// A hot route is matched here only when no other route of its method,
// table or Handle, could match the same path (a static segment the router
// would prefer, a parameter where it has a literal); else, and for any
// path it does not match exactly (an empty parameter, a trailing slash),
// the router decides as before.

// maxHotParams bounds a hot route's path parameters.
const maxHotParams = 4

// hotRoute is one hot route's compiled pattern.
type hotRoute struct {
	method string
	segs   []hotSeg
	names  []string // parameter names, in order (pathParamNames)
	r      *Route
	body   *bind.Plan
	off    bool // another route may match the same paths
}

// hotSeg is one segment of a pattern: a literal, a parameter, or (other
// routes only) a catch-all parameter that matches the rest of a path.
type hotSeg struct {
	lit   string
	param bool
	rest  bool
}

// compilePattern splits a router pattern into segments; plain reports
// whether it has only literals and plain parameters (what a hot route
// may have).
func compilePattern(path string) (segs []hotSeg, plain bool) {
	plain = strings.HasPrefix(path, "/")
	for _, s := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		switch {
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
			name, re, _ := strings.Cut(s[1:len(s)-1], ":")
			if re == "*" {
				segs = append(segs, hotSeg{rest: true})
				plain = false
				continue
			}
			if re != "" || strings.ContainsAny(name, "{}") {
				plain = false
			}
			segs = append(segs, hotSeg{param: true})
		case strings.ContainsAny(s, "{}"):
			// A parameter inside a segment: anything there, to be safe.
			segs = append(segs, hotSeg{param: true})
			plain = false
		default:
			segs = append(segs, hotSeg{lit: s})
		}
	}
	return segs, plain
}

// overlaps reports whether two patterns may match the same path.
func overlaps(a, b []hotSeg) bool {
	for i := 0; ; i++ {
		aEnd, bEnd := i == len(a), i == len(b)
		switch {
		case aEnd && bEnd:
			return true
		case !aEnd && a[i].rest, !bEnd && b[i].rest:
			return true
		case aEnd || bEnd:
			return false
		case !a[i].param && !b[i].param && a[i].lit != b[i].lit:
			return false
		}
	}
}

// addHot compiles a table route marked Hot.
func (s *Server) addHot(r *Route, body *bind.Plan) {
	segs, plain := compilePattern(r.Path)
	names := pathParamNames(r.Path)
	if !plain || len(names) > maxHotParams {
		return
	}
	s.hot = append(s.hot, &hotRoute{method: r.Method, segs: segs, names: names, r: r, body: body})
}

// noteTable notes every table route (see noteRoute).
func (s *Server) noteTable() {
	for i := range s.routes {
		s.noteRoute(s.routes[i].Method, s.routes[i].Path, &s.routes[i])
	}
}

// noteRoute turns off the hot routes another route of the same method may
// share paths with (called for every route, table and Handle alike).
func (s *Server) noteRoute(method, path string, self *Route) {
	segs, _ := compilePattern(path)
	for _, h := range s.hot {
		if h.method != method || h.r == self {
			continue
		}
		if overlaps(h.segs, segs) {
			h.off = true
		}
	}
}

// hotParams are a hot route's parameter values, copied from the path.
type hotParams struct {
	names []string
	vals  [maxHotParams]string
}

// dispatch serves a hot route's request itself, or hands it to the router.
func (s *Server) dispatch(rc *fasthttp.RequestCtx) {
	if len(s.hot) > 0 {
		method := rc.Request.Header.Method()
		path := rc.Request.URI().PathOriginal()
		for _, h := range s.hot {
			if h.off || string(method) != h.method {
				continue
			}
			if h.match(path) {
				ps := hotParams{names: h.names}
				h.fill(path, &ps)
				s.serve(rc, h.r, h.names, h.body, &ps)
				return
			}
		}
	}
	s.router.Handler(rc)
}

// match compares path with the pattern.
func (h *hotRoute) match(path []byte) bool {
	n := 0
	for _, sg := range h.segs {
		if len(path) == 0 || path[0] != '/' {
			return false
		}
		path = path[1:]
		end := len(path)
		for i, c := range path {
			if c == '/' {
				end = i
				break
			}
		}
		seg := path[:end]
		if sg.param {
			if len(seg) == 0 {
				return false // the router's business
			}
			n++
		} else if string(seg) != sg.lit {
			return false
		}
		path = path[end:]
	}
	if len(path) != 0 {
		return false
	}
	return n == len(h.names)
}

// fill copies the parameters of path, which matched, into ps: one copy
// of the path holds them all (a poll has two: one allocation, not two).
func (h *hotRoute) fill(raw []byte, ps *hotParams) {
	if len(h.names) == 0 {
		return
	}
	var path string
	if len(h.names) == 1 {
		path = unsafe.String(unsafe.SliceData(raw), len(raw)) // the one value is copied below
	} else {
		path = string(raw)
	}
	n := 0
	for _, sg := range h.segs {
		path = path[1:]
		end := strings.IndexByte(path, '/')
		if end < 0 {
			end = len(path)
		}
		if sg.param {
			if ps.vals[n] = path[:end]; len(h.names) == 1 {
				ps.vals[n] = strings.Clone(ps.vals[n])
			}
			n++
		}
		path = path[end:]
	}
}

// param returns a hot route's parameter name, raw as in the path.
func (ps *hotParams) param(name string) (string, bool) {
	for i, n := range ps.names {
		if n == name {
			return ps.vals[i], true
		}
	}
	return "", false
}

// HotRoutes returns the operation ids of the hot routes matched ahead of
// the router (those another route does not share paths with).
func (s *Server) HotRoutes() []string {
	var ids []string
	for _, h := range s.hot {
		if !h.off {
			ids = append(ids, h.r.OperationID)
		}
	}
	return ids
}
