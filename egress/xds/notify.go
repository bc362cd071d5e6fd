package xds

import (
	"context"
	"sync"
)

// notifier delivers Gateway names on an unbuffered channel without ever blocking the
// code that marks them: marked names wait in a set (one entry per Gateway, in marking
// order) until a pump goroutine hands them to the receiver.
type notifier struct {
	out  chan string
	wake chan struct{}

	mu     sync.Mutex
	queue  []string
	queued map[string]bool
}

func newNotifier() *notifier {
	return &notifier{out: make(chan string), wake: make(chan struct{}, 1), queued: map[string]bool{}}
}

// mark records that gateway changed. It never blocks.
func (n *notifier) mark(gateway string) {
	n.mu.Lock()
	if !n.queued[gateway] {
		n.queued[gateway] = true
		n.queue = append(n.queue, gateway)
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run hands marked names to the receiver until ctx is done.
func (n *notifier) run(ctx context.Context) {
	for {
		gateway, ok := n.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-n.wake:
				continue
			}
		}
		select {
		case n.out <- gateway:
		case <-ctx.Done():
			return
		}
	}
}

// next takes the oldest marked name; a name marked again after this is delivered again.
func (n *notifier) next() (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.queue) == 0 {
		return "", false
	}
	gateway := n.queue[0]
	n.queue[0] = ""
	n.queue = n.queue[1:]
	delete(n.queued, gateway)
	return gateway, true
}
