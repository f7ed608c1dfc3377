// Command loadgen posts AdmissionReviews to a webhook at a constant rate, the way kube-apiserver calls one: Go's
// HTTP/1.1 client over TLS, keep-alive, up to 25 idle connections, no cap on open ones (k8s.io/client-go's
// transport cache and k8s.io/apiserver's webhook client config set those). It stands in for the API server in
// bench/soak.py, where a Python client sharing two cores measured its own starvation as much as the server.
//
// Open loop: request i is due at start + i/rate whether or not earlier ones were answered, and its latency is
// counted from that due time (no coordinated omission). For every request it writes one line to -out:
//
//	index due wrote first_byte done local_port reused status error
//
// times in seconds of CLOCK_MONOTONIC, the clock of Python's time.monotonic(), so the lines line up with a
// server's own timestamps; "wrote" is when the request was written to the socket (on loopback it is then in the
// server's receive buffer), "first_byte" when the answer's first byte was read. Bodies come from -bodies, one per
// line, used in turn.
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

type record struct {
	due, wrote, firstByte, done time.Time
	port                        int
	reused                      bool
	status                      int
	err                         string
}

// monotonic returns CLOCK_MONOTONIC now, read by a system call (Go's time.Now carries the same clock but does not
// expose its absolute value).
func monotonic() time.Duration {
	var ts syscall.Timespec
	const clockMonotonic = 1
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func main() {
	url := flag.String("url", "", "the webhook's URL")
	caFile := flag.String("ca", "", "PEM file of the CA that signed the webhook's certificate")
	bodiesFile := flag.String("bodies", "", "request bodies, one per line")
	rate := flag.Float64("rate", 200, "requests per second")
	seconds := flag.Float64("seconds", 60, "how long to send")
	out := flag.String("out", "", "file for one line per request")
	idle := flag.Int("idle-per-host", 25, "idle keep-alive connections kept (client-go's transport: 25)")
	timeout := flag.Duration("timeout", 10*time.Second, "per-request timeout (the API server's is the webhook's timeoutSeconds)")
	flag.Parse()

	pem, err := os.ReadFile(*caFile)
	check(err)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		check(fmt.Errorf("no certificate in %s", *caFile))
	}
	raw, err := os.ReadFile(*bodiesFile)
	check(err)
	bodies := bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n"))

	client := &http.Client{
		Timeout: *timeout,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}},
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: *idle,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   false,
		},
	}

	count := int(*rate * *seconds)
	records := make([]record, count)
	period := time.Duration(float64(time.Second) / *rate)
	start := time.Now().Add(50 * time.Millisecond)
	// Calibrated once: Go's monotonic reading of time.Now is CLOCK_MONOTONIC, so an offset maps one onto the other.
	before := time.Now()
	mono := monotonic()
	base := before.Add(time.Since(before) / 2)

	var wg sync.WaitGroup
	for i := 0; i < count; i++ {
		due := start.Add(time.Duration(i) * period)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func(i int, due time.Time) {
			defer wg.Done()
			records[i] = send(client, *url, bodies[i%len(bodies)], due)
		}(i, due)
	}
	wg.Wait()

	f, err := os.Create(*out)
	check(err)
	w := bufio.NewWriter(f)
	at := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return (mono + t.Sub(base)).Seconds()
	}
	latencies := make([]float64, 0, count)
	for i, r := range records {
		fmt.Fprintf(w, "%d %.6f %.6f %.6f %.6f %d %t %d %q\n",
			i, at(r.due), at(r.wrote), at(r.firstByte), at(r.done), r.port, r.reused, r.status, r.err)
		latencies = append(latencies, r.done.Sub(r.due).Seconds())
	}
	check(w.Flush())
	check(f.Close())
	sort.Float64s(latencies)
	q := func(p float64) float64 {
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))] * 1000
	}
	fmt.Fprintf(os.Stderr, "loadgen: %d requests, from due time p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		count, q(0.5), q(0.99), latencies[len(latencies)-1]*1000)
}

func send(client *http.Client, url string, body []byte, due time.Time) record {
	r := record{due: due}
	// The callbacks run on the transport's goroutines. WroteRequest may even run after the answer was returned
	// (the writing goroutine waited for a CPU while the server answered): "wrote" is then left unknown (0).
	var mu sync.Mutex
	var wrote time.Time
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			mu.Lock()
			defer mu.Unlock()
			r.reused = info.Reused
			if addr, ok := info.Conn.LocalAddr().(*net.TCPAddr); ok {
				r.port = addr.Port
			}
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			mu.Lock()
			defer mu.Unlock()
			wrote = time.Now()
		},
		GotFirstResponseByte: func() {
			mu.Lock()
			defer mu.Unlock()
			r.firstByte = time.Now()
		},
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	check(err)
	req.Header.Set("Content-Type", "application/json")
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.status = resp.StatusCode
	}
	r.done = time.Now()
	mu.Lock()
	defer mu.Unlock()
	r.wrote = wrote
	if err != nil {
		r.err = err.Error()
	}
	return r
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}
