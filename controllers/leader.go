package controllers

import (
	"context"
	"sync/atomic"
)

// leadership tells whether this replica is the one that writes to the API server.
//
// Every replica of the manager gathers, translates and publishes to the Envoys connected
// to it, so an Envoy gets the full configuration whichever replica its xDS stream
// reached, and losing a replica costs no configuration. Only the elected one writes:
// statuses, events, the Envoy fleets (Deployments, Services) and NetworkPolicies. Two
// writers would fight over statuses and could delete each other's objects during a
// rollout of different versions.
//
// A follower publishes new endpoints without first widening the Envoy egress policy
// (that is a write): until the leader widens it, the policy can only refuse traffic,
// never allow more.
type leadership struct {
	elected atomic.Bool
	changes chan struct{}
}

func newLeadership() *leadership { return &leadership{changes: make(chan struct{}, 1)} }

// Start runs once this replica holds the lease (at once when leader election is off);
// the manager exits when the lease is lost, so elected never goes back to false.
func (l *leadership) Start(ctx context.Context) error {
	l.elected.Store(true)
	select {
	case l.changes <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection makes the manager start it only on the elected replica.
func (l *leadership) NeedLeaderElection() bool { return true }

// writes reports whether this replica writes to the API server.
func (r *Reconciler) writes() bool { return r.leader.elected.Load() }
