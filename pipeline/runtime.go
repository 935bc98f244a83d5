package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/murphy-rl/murphy/topics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// RetryConfig bounds retries of retriable handler errors.
type RetryConfig struct {
	// MaxRetries before a record is dead-lettered.
	MaxRetries int `yaml:"max_retries"`
	// InitialInterval is the first backoff; it doubles up to MaxInterval.
	InitialInterval time.Duration `yaml:"initial_interval"`
	MaxInterval     time.Duration `yaml:"max_interval"`
}

// RuntimeConfig configures a Runtime.
type RuntimeConfig struct {
	Kafka   KafkaConfig
	Catalog topics.Catalog
	// Name names the process in logs ("execute", "run", ...).
	Name string
	// Registry receives the runtime's and the stages' metrics (nil: a new one).
	Registry *prometheus.Registry
	// HTTPAddr serves /metrics, /healthz and /readyz ("" = no server).
	HTTPAddr string
	Retry    RetryConfig
	// ShutdownTimeout bounds how long in-flight records may take to finish.
	ShutdownTimeout time.Duration
	// GroupPrefix prefixes consumer group names (default: the catalog's topic
	// prefix, so that deployments sharing a cluster never share groups).
	GroupPrefix string
	Logger      *slog.Logger
	// MaxUnsettled bounds, per input of a stage with Concurrency > 1, the
	// records handled or waiting for the brokers to acknowledge their
	// outputs (default 256). Only Concurrency of them run the handler at
	// once; the others wait for acknowledgements, so a handler slot is free
	// again as soon as its handler returns.
	MaxUnsettled int
}

// Runtime runs stages on Kafka: a Watermill router for stateless stages and
// partition consumers for stateful ones, plus metrics and health endpoints.
type Runtime struct {
	cfg      RuntimeConfig
	log      *slog.Logger
	reg      *prometheus.Registry
	metrics  *Metrics
	producer Producer
	// ordered is created on first use (OrderedProducer) and closed by Run.
	orderedMu sync.Mutex
	ordered   Producer
	router    *message.Router
	parts     []PartitionStage
	handlers  int
	pools     []*handlerPool

	ready    atomic.Bool
	failOnce sync.Once
	failErr  chan error
}

// NewRuntime validates cfg and builds a runtime.
func NewRuntime(cfg RuntimeConfig) (*Runtime, error) {
	if err := cfg.Kafka.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Catalog.Validate(); err != nil {
		return nil, err
	}
	if cfg.Retry.MaxRetries == 0 && cfg.Retry.InitialInterval == 0 {
		cfg.Retry = RetryConfig{MaxRetries: 5, InitialInterval: 100 * time.Millisecond, MaxInterval: 5 * time.Second}
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.MaxUnsettled <= 0 {
		cfg.MaxUnsettled = 256
	}
	if cfg.GroupPrefix == "" {
		cfg.GroupPrefix = cfg.Catalog.Prefix
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: cfg.ShutdownTimeout},
		watermillLogger(cfg.Logger.With("component", "router"), slog.LevelDebug))
	if err != nil {
		return nil, err
	}
	rt := &Runtime{
		cfg: cfg, log: cfg.Logger, reg: reg, metrics: m,
		producer: NewProducer(cfg.Kafka), router: router, failErr: make(chan error, 1),
	}
	return rt, nil
}

// Producer is the runtime's shared producer.
func (rt *Runtime) Producer() Producer { return rt.producer }

// OrderedProducer is the runtime's shared NewOrderedProducer, for stages
// that need their records in a partition in the order they produced them.
// Run closes it.
func (rt *Runtime) OrderedProducer() Producer {
	rt.orderedMu.Lock()
	defer rt.orderedMu.Unlock()
	if rt.ordered == nil {
		rt.ordered = NewOrderedProducer(rt.cfg.Kafka)
	}
	return rt.ordered
}

// Registry is where stages register their metrics.
func (rt *Runtime) Registry() *prometheus.Registry { return rt.reg }

// Logger is the runtime's logger, for the stages it runs.
func (rt *Runtime) Logger() *slog.Logger { return rt.log }

// Metrics are the runtime's metrics.
func (rt *Runtime) Metrics() *Metrics { return rt.metrics }

// Catalog is the runtime's topic catalog.
func (rt *Runtime) Catalog() topics.Catalog { return rt.cfg.Catalog }

// Ready reports whether every consumer has started.
func (rt *Runtime) Ready() bool { return rt.ready.Load() }

// GroupID is the consumer group of a stage.
func (rt *Runtime) GroupID(stage string) string { return rt.cfg.GroupPrefix + stage }

func (rt *Runtime) fail(err error) {
	rt.failOnce.Do(func() { rt.failErr <- err })
}

// AddStage registers a stateless stage: one Watermill handler per input,
// wrapped with metrics, retry, panic recovery and the DLQ.
func (rt *Runtime) AddStage(s Stage) error {
	if s.Name == "" || len(s.Inputs) == 0 || s.Handler == nil {
		return errors.New("stage needs a name, inputs and a handler")
	}
	conc := max(s.Concurrency, 1)
	// A sequential stage keeps its window of one (each record settled
	// before the next); a concurrent one lets records wait for their
	// outputs' acknowledgements outside the handler slots.
	window := conc
	if conc > 1 {
		window = max(conc, rt.cfg.MaxUnsettled)
	}
	pool := newHandlerPool(conc)
	rt.pools = append(rt.pools, pool)
	sub, err := NewSubscriber(SubscriberConfig{
		Kafka: rt.cfg.Kafka, ConsumerGroup: rt.GroupID(s.Name), MaxInFlight: window,
		CloseTimeout: rt.cfg.ShutdownTimeout, CommitInterval: rt.cfg.Kafka.CommitInterval,
		OnMessage: func(topic string, p int, off, hwm int64) {
			rt.metrics.lag(s.Name, topic, p, off, hwm)
		},
		Logger:         watermillLogger(rt.log.With("stage", s.Name), slog.LevelInfo),
		handlerSettles: true,
	})
	if err != nil {
		return err
	}
	core := rt.coreHandler(s)
	h := rt.dlqMiddleware(s.Name)(rt.retryMiddleware(s.Name)(middleware.Recoverer(core)))
	for _, in := range s.Inputs {
		rt.router.AddConsumerHandler(s.Name+"@"+in, in, sub, func(msg *message.Message) (err error) {
			// The handler settles its record itself (or hands that to the
			// producer): the subscriber then needs no goroutine per record
			// waiting for Watermill's ack.
			d := deliveryOf(msg.Context())
			defer func() {
				if p := recover(); p != nil {
					if !d.later {
						d.settle(fmt.Errorf("panic: %v", p))
					}
					panic(p)
				}
				if !d.later {
					d.settle(err)
				}
			}()
			return pool.run(msg, h)
		})
		rt.handlers++
	}
	return nil
}

// coreHandler adapts a Handler: decode coordinates, run, produce outputs.
func (rt *Runtime) coreHandler(s Stage) message.HandlerFunc {
	// Resolve the per-record metric children once, not per record.
	in := map[string]prometheus.Counter{}
	for _, t := range s.Inputs {
		in[t] = rt.metrics.In.WithLabelValues(s.Name, t)
	}
	latency := rt.metrics.Latency.WithLabelValues(s.Name)
	var outCounters sync.Map // topic → prometheus.Counter
	return func(msg *message.Message) ([]*message.Message, error) {
		rec := recordOf(msg)
		if c, ok := in[rec.Topic]; ok {
			c.Inc()
		}
		start := time.Now()
		outs, err := s.Handler(msg.Context(), rec)
		latency.Observe(time.Since(start).Seconds())
		if err != nil {
			rt.metrics.Failures.WithLabelValues(s.Name, Reason(err)).Inc()
			return nil, err
		}
		// The record is settled when its outputs are acknowledged: the
		// handler's goroutine is free at once, and a failed write
		// redelivers the record (its outputs are then written again).
		d := deliveryOf(msg.Context())
		d.later = true
		rt.producer.ProduceAsync(outs, func(err error) {
			if err != nil {
				rt.metrics.Failures.WithLabelValues(s.Name, "produce").Inc()
				rt.log.Warn("produce failed; record will be redelivered", "stage", s.Name, "error", err)
				d.settle(err)
				return
			}
			for _, o := range outs {
				c, ok := outCounters.Load(o.Topic)
				if !ok {
					c, _ = outCounters.LoadOrStore(o.Topic, rt.metrics.Out.WithLabelValues(s.Name, o.Topic))
				}
				c.(prometheus.Counter).Inc()
			}
			d.settle(nil)
		})
		return nil, nil
	}
}

// AddPartitionStage registers a stateful stage.
func (rt *Runtime) AddPartitionStage(s PartitionStage) error {
	if s.Name == "" || s.Input == "" || s.Assigned == nil {
		return errors.New("partition stage needs a name, an input and Assigned")
	}
	rt.parts = append(rt.parts, s)
	return nil
}

// Run runs every stage until ctx is cancelled, then shuts down gracefully:
// in-flight records finish and are committed. It returns nil on a clean
// shutdown.
func (rt *Runtime) Run(ctx context.Context) error {
	defer rt.producer.Close()
	defer func() {
		rt.orderedMu.Lock()
		defer rt.orderedMu.Unlock()
		if rt.ordered != nil {
			rt.ordered.Close()
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var srv *http.Server
	if rt.cfg.HTTPAddr != "" {
		var err error
		if srv, err = rt.serveHTTP(); err != nil {
			return err
		}
		defer func() {
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			_ = srv.Shutdown(sctx)
		}()
	}

	var wg sync.WaitGroup
	errs := make(chan error, len(rt.parts)+1)
	stopPools := make(chan struct{})
	defer close(stopPools)
	for _, p := range rt.pools {
		p.start(stopPools)
	}
	if rt.handlers > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rt.router.Run(ctx); err != nil {
				errs <- fmt.Errorf("router: %w", err)
			}
		}()
	}
	for _, ps := range rt.parts {
		pc := newPartitionConsumer(rt, ps)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pc.run(ctx); err != nil {
				errs <- fmt.Errorf("stage %s: %w", ps.Name, err)
			}
		}()
	}
	// Brokers that refuse this runtime (credentials, certificates) stop it
	// at once with their error, rather than its readers retrying forever.
	go func() {
		if err := checkBrokers(ctx, rt.cfg.Kafka); err != nil && ctx.Err() == nil {
			rt.fail(err)
		}
	}()
	go func() {
		if rt.handlers > 0 {
			select {
			case <-rt.router.Running():
			case <-ctx.Done():
				return
			}
		}
		rt.ready.Store(true)
	}()

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-rt.failErr:
	case runErr = <-errs:
	}
	rt.ready.Store(false)
	cancel()
	if rt.handlers > 0 {
		_ = rt.router.Close()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		runErr = errors.Join(runErr, e)
	}
	return runErr
}

func (rt *Runtime) serveHTTP() (*http.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(rt.reg, promhttp.HandlerOpts{Registry: rt.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !rt.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	ln, err := net.Listen("tcp", rt.cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", rt.cfg.HTTPAddr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	rt.log.Info("serving metrics and health", "addr", ln.Addr().String())
	return srv, nil
}

// handlerPool runs a stage's handler chain on up to Concurrency long-lived
// goroutines. Watermill starts a goroutine per record; the chain (decoding
// and encoding whole records) needs a deep stack, and growing a fresh
// goroutine's stack to it, record after record, was a measurable share of
// the pipeline's CPU. The pool's workers keep their stacks, and their number
// bounds the handlers running at once. Workers start when no idle one is
// there to take a record, so a stage whose handlers are quick keeps a few
// busy workers rather than waking a different one of many for each record.
type handlerPool struct {
	size    int
	started atomic.Int64
	jobs    chan *handlerJob
	stop    <-chan struct{}
}

type handlerJob struct {
	msg      *message.Message
	h        message.HandlerFunc
	err      error
	panicked any
	done     chan struct{} // receives once when the job has run
}

func newHandlerPool(size int) *handlerPool {
	return &handlerPool{size: size, jobs: make(chan *handlerJob)}
}

// start lets the pool run jobs; its workers stop when stop is closed.
func (p *handlerPool) start(stop <-chan struct{}) { p.stop = stop }

// worker runs first, then the jobs handed to it until the pool stops.
func (p *handlerPool) worker(first *handlerJob) {
	first.run()
	for {
		select {
		case j := <-p.jobs:
			j.run()
		case <-p.stop:
			return
		}
	}
}

// jobs are reused: a record's job and its done channel are two
// allocations fewer per record.
var jobs = sync.Pool{New: func() any { return &handlerJob{done: make(chan struct{}, 1)} }}

func (j *handlerJob) run() {
	defer func() { j.done <- struct{}{} }()
	defer func() {
		// A panic is handed back to the record's own goroutine, which
		// settles the record and re-raises it there.
		if v := recover(); v != nil {
			j.panicked = v
		}
	}()
	_, j.err = j.h(j.msg)
}

// run runs h on msg on a worker, waiting for a free one.
func (p *handlerPool) run(msg *message.Message, h message.HandlerFunc) error {
	j := jobs.Get().(*handlerJob)
	j.msg, j.h = msg, h
	select {
	case p.jobs <- j: // an idle worker took it
	default:
		if p.started.Add(1) <= int64(p.size) {
			go p.worker(j)
			break
		}
		p.started.Add(-1)
		p.wait(msg, j)
	}
	return p.finish(j)
}

// wait hands j to the next worker free.
func (p *handlerPool) wait(msg *message.Message, j *handlerJob) {
	select {
	case p.jobs <- j:
	case <-msg.Context().Done():
		j.err = msg.Context().Err()
		j.done <- struct{}{}
	case <-p.stop:
		j.err = errors.New("runtime stopped")
		j.done <- struct{}{}
	}
}

// finish waits for j to have run (or been given up) and returns its
// outcome, re-raising its panic.
func (p *handlerPool) finish(j *handlerJob) error {
	<-j.done
	err, panicked := j.err, j.panicked
	*j = handlerJob{done: j.done}
	jobs.Put(j)
	if panicked != nil {
		panic(panicked)
	}
	return err
}
