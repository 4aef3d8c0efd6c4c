package httpsink_test

import (
	"context"
	"fmt"

	"github.com/pacer-dev/pacer/internal/app/testapi"
	"github.com/pacer-dev/pacer/pacer"
	"github.com/pacer-dev/pacer/sinks/httpsink"
)

func Example() {
	api := testapi.New(testapi.Config{Rate: 1, Burst: 1})
	defer api.Close()

	s, err := httpsink.New(httpsink.Config{
		URL:  api.URL() + "/v1/events",
		Body: `{"user":{{json (.Field "user")}},"event":{{.Value}}}`,
	})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	msgs := []*pacer.Message{
		{ID: "orders/0/1", Value: []byte(`{"user":"ann"}`)},
		{ID: "orders/0/2", Value: []byte(`{"user":"bob"}`)}, // over the API's burst: 429
		{ID: "orders/0/3", Value: []byte(`{"nobody":1}`)},   // not sent
	}
	results := make([]pacer.Result, len(msgs))
	fb := s.Deliver(context.Background(), msgs, results)
	for i, r := range results {
		fmt.Println(msgs[i].ID, r.Outcome, r.RetryAfter)
	}
	fmt.Println("status", fb.Status, "throttled", fb.Throttled, "limit", fb.RateLimit.Limit, "remaining", fb.RateLimit.Remaining)
	fmt.Println("accepted", api.Stats().Accepted, "key", api.Accepted()[0].IdempotencyKey)
	// Output:
	// orders/0/1 delivered 0s
	// orders/0/2 retry 1s
	// orders/0/3 retry 1s
	// status 429 throttled true limit 1 remaining 0
	// accepted 1 key orders/0/1
}
