package retrystore

import "testing"

func TestSignal(t *testing.T) {
	t.Parallel()
	var s Signal
	s.Fire() // nobody waits: nothing to do
	a, b := s.Wait(), s.Wait()
	select {
	case <-a:
		t.Fatal("closed before Fire")
	default:
	}
	s.Fire()
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Fatal("Fire did not wake a waiter")
		}
	}
	c := s.Wait()
	select {
	case <-c:
		t.Fatal("a channel taken after Fire is already closed")
	default:
	}
}
