package load

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"ticketd/app"
	"ticketd/persistence"
)

// ProfileEnv, set for a service role, names a file prefix: the process
// writes <prefix>.cpu.pprof (its whole life) and <prefix>.allocs.pprof at
// shutdown (the ceiling role: <prefix>.ceiling.cpu.pprof and so on).
const ProfileEnv = "TICKETD_BENCH_PROFILE"

// RoleEnv names the environment variable that turns the loadgen binary into
// one of its child servers. It is a harness detail, not a service mode.
const RoleEnv = "TICKETD_BENCH_ROLE"

// Roles the loadgen binary re-executes itself as.
const (
	RoleCeiling = "ceiling"
	RoleNoSync  = "nosync"
	// RoleService is the same composition with fsync on: the stand-in for
	// the ticketd binary in go test, which must not build it.
	RoleService = "service"
	// RoleMix is the integrator's client (a MixSpec as JSON on stdin, its
	// Result as JSON on stdout).
	RoleMix = "mix"
)

// ceilingBody is what the ceiling server decodes: the union of the bodies
// the scenarios send (order and check-in).
type ceilingBody struct {
	Email string `json:"email"`
	Name  string `json:"name"`
	Items []struct {
		ItemType string `json:"itemType"`
		ItemID   string `json:"itemId"`
		Quantity int    `json:"quantity"`
	} `json:"items"`
	RegistrationID string `json:"registrationId"`
	SubjectType    string `json:"subjectType"`
}

// ceilingAnswer is about the size of a placed order's JSON, so the ceiling
// writes as many bytes as the service does.
var ceilingAnswer = []byte(`{"id":"ord_01m80je09pzy02793r04zjh8hp","eventId":"evt_01m80je06d7aca5stxyc0g1dea","orderNumber":"01m80je06d7aca5stxyc0g1dea-BT3RGB81","status":"open","email":"b1@x.com","name":"B","items":[{"itemType":"registration_type","itemId":"tt_01m80je08a0hs5x214cz7we1b7","name":"GA","quantity":1,"unitPriceAmount":0,"amount":0}],"totalAmount":0,"currency":"USD","alreadyRegistered":false,"registrationId":null,"redemptionCode":null,"responses":null,"holdExpiresAt":"2026-11-22T03:02:43Z","paymentId":null,"orderUrl":"http://127.0.0.1:18931/orders/01m80je06d7aca5stxyc0g1dea-BT3RGB81","checkoutUrl":"http://127.0.0.1:18931/orders/01m80je06d7aca5stxyc0g1dea-BT3RGB81/checkout","paymentUrl":null,"successUrl":null,"cancelUrl":null,"createdAt":"2026-11-22T02:47:43Z","updatedAt":"2026-11-22T02:47:43Z"}`)

// RunRole runs the child server named by role with args until SIGTERM.
func RunRole(role string, args []string, out io.Writer) error {
	switch role {
	case RoleCeiling:
		return runCeiling(args, out)
	case RoleNoSync:
		return runService(args, out, true)
	case RoleService:
		return runService(args, out, false)
	case RoleMix:
		return runMix(os.Stdin, out)
	}
	return fmt.Errorf("bench: unknown role %q", role)
}

// CeilingHandler is the ceiling server's whole work per request: decode
// the body, answer a placed order's worth of JSON. Exported so in-process
// benchmarks (http's BenchmarkPipelineCeiling) measure the same cost the
// scenarios' ratios divide by.
func CeilingHandler(rc *fasthttp.RequestCtx) {
	var b ceilingBody
	if err := gojson.Unmarshal(rc.PostBody(), &b); err != nil {
		rc.SetStatusCode(400)
		return
	}
	rc.SetStatusCode(201)
	rc.SetContentType("application/json")
	rc.SetBody(ceilingAnswer)
}

func runCeiling(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if prefix := os.Getenv(ProfileEnv); prefix != "" {
		// The reference profiled too: a route's profile is read against it.
		stop, err := StartProfile(prefix + ".ceiling")
		if err != nil {
			return err
		}
		defer stop()
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("bench: ceiling: %w", err)
	}
	srv := &fasthttp.Server{
		Handler:               CeilingHandler,
		NoDefaultServerHeader: true,
		MaxRequestBodySize:    1 << 20,
	}
	fmt.Fprintf(out, "ticketd listening on http://%s\n", ln.Addr())
	go waitTerm(func() { _ = srv.Shutdown() })
	return srv.Serve(ln)
}

func waitTerm(f func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
	f()
}

// runService runs the service's one wiring, app.Main, as cmd/ticketd does; with
// noSync its store is opened with persistence.Options.NoSync: a measurement
// of what the fsync costs, never a way to run the service.
func runService(args []string, out io.Writer, noSync bool) error {
	fs := flag.NewFlagSet("nosync", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "")
	dir := fs.String("data-dir", "", "")
	rl := fs.Int("rate-limit-per-minute", 0, "")
	skl := fs.Int("storefront-key-limit-per-minute", 0, "")
	ipl := fs.Int("storefront-ip-limit-per-minute", 0, "")
	catl := fs.Int("storefront-catalog-ip-limit-per-minute", 0, "")
	devl := fs.Int("device-limit-per-minute", 0, "")
	openOrders := fs.Int("storefront-open-orders-per-ip", 0, "")
	openSessions := fs.Int("storefront-open-sessions-per-ip", 0, "")
	perIP := fs.Int("max-conns-per-ip", 0, "")
	hold := fs.Duration("order-hold", 6*time.Hour, "")
	_ = fs.String("log-level", "warn", "")
	idle := fs.Duration("idle-timeout", 10*time.Minute, "")
	snapEvery := fs.Int("snapshot-every", 50_000, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("bench: service: -data-dir is required")
	}
	if prefix := os.Getenv(ProfileEnv); prefix != "" {
		stop, err := StartProfile(prefix)
		if err != nil {
			return err
		}
		defer stop()
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(200) // as cmd/ticketd serve does
	}
	cfg := app.DefaultConfig()
	cfg.Addr, cfg.DataDir, cfg.LogLevel = *addr, *dir, "warn"
	cfg.RateLimitPerMinute, cfg.StorefrontKeyPerMinute, cfg.StorefrontIPPerMinute = *rl, *skl, *ipl
	cfg.OrderHold, cfg.IdleTimeout, cfg.SnapshotEvery = *hold, *idle, *snapEvery
	cfg.StorefrontCatalogIPPerMinute, cfg.MaxConnsPerIP, cfg.DevicePerMinute = *catl, *perIP, *devl
	cfg.StorefrontCatalogIPPerMinute, cfg.MaxConnsPerIP = *catl, *perIP
	cfg.StorefrontOpenOrdersPerIP, cfg.StorefrontOpenSessionsPerIP = *openOrders, *openSessions
	cfg.Tune = &app.Tuning{Store: func(o *persistence.Options) { o.NoSync = noSync }}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return app.NewMain(cfg, out).Run(ctx)
}

// StartProfile starts the CPU profile (to <prefix>.cpu.pprof); the returned func stops it and
// writes the allocation profile.
func StartProfile(prefix string) (func(), error) {
	f, err := os.Create(prefix + ".cpu.pprof")
	if err != nil {
		return nil, fmt.Errorf("bench: profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if a, err := os.Create(prefix + ".allocs.pprof"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
	}, nil
}

func runMix(in io.Reader, out io.Writer) error {
	var spec MixSpec
	if err := gojson.NewDecoder(in).Decode(&spec); err != nil {
		return fmt.Errorf("bench: mix spec: %w", err)
	}
	if len(spec.Registrations) == 0 {
		return errors.New("bench: mix spec: no registrations")
	}
	c, err := NewClient(spec.Base, spec.Conns)
	if err != nil {
		return err
	}
	return gojson.NewEncoder(out).Encode(spec.Load(c).Run())
}
