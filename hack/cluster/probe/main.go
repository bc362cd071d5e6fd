// Command probe is the client pod of the single-node cluster's end-to-end test
// (test/cluster): it serves GET /fetch?url=URL&host=HOST on its pod address and makes
// that request from inside the pod, so the request leaves with the pod's own source
// address, as an application's would. The answer is JSON: status, headers and body, or
// the transport error.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"time"
)

// Result is what /fetch answers.
type Result struct {
	Status int         `json:"status,omitempty"`
	Header http.Header `json:"header,omitempty"`
	Body   string      `json:"body,omitempty"`
	Error  string      `json:"error,omitempty"`
}

func main() {
	listen := flag.String("listen", ":8080", "address to serve /fetch and /healthz on")
	flag.Parse()
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
		// A redirect is an answer to report, not to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	http.HandleFunc("/fetch", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(fetch(client, r.URL.Query().Get("url"), r.URL.Query().Get("host")))
	})
	srv := &http.Server{Addr: *listen, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

func fetch(client *http.Client, url, host string) Result {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return Result{Error: err.Error()}
	}
	if host != "" {
		req.Host = host
	}
	resp, err := client.Do(req)
	if err != nil {
		return Result{Error: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Result{Status: resp.StatusCode, Header: resp.Header, Error: "reading the body: " + err.Error()}
	}
	return Result{Status: resp.StatusCode, Header: resp.Header, Body: string(body)}
}
