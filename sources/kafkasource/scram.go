package kafkasource

import (
	"fmt"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// scramClient adapts github.com/xdg-go/scram (the SCRAM client sarama's
// documentation names) to sarama's SCRAMClient: RFC 5802/7677 with SASLprep
// (RFC 4013) of the user name and password, so a non-ASCII password is
// normalised the way the RFC requires before it is hashed. No channel
// binding. One scramClient serves one authentication at a time (sarama
// creates one per broker connection through SCRAMClientGeneratorFunc).
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

var _ sarama.SCRAMClient = (*scramClient)(nil)

// newSCRAMClient returns sarama's generator for hash (scram.SHA256 or
// scram.SHA512).
func newSCRAMClient(hash scram.HashGeneratorFcn) func() sarama.SCRAMClient {
	return func() sarama.SCRAMClient { return &scramClient{hash: hash} }
}

// Begin starts a conversation; it fails when SASLprep refuses the user
// name or password (a prohibited character such as a control code).
func (c *scramClient) Begin(user, pass, authzID string) error {
	cl, err := c.hash.NewClient(user, pass, authzID)
	if err != nil {
		return fmt.Errorf("kafka: scram: sasl.username or sasl.password: %w", err)
	}
	c.conv = cl.NewConversation()
	return nil
}

// Step answers the server's challenge.
func (c *scramClient) Step(challenge string) (string, error) {
	if c.conv == nil {
		return "", fmt.Errorf("kafka: scram: Step before Begin")
	}
	resp, err := c.conv.Step(challenge)
	if err != nil {
		return "", fmt.Errorf("kafka: scram: %w", err)
	}
	return resp, nil
}

// Done reports whether the server's signature was verified.
func (c *scramClient) Done() bool { return c.conv != nil && c.conv.Done() }
