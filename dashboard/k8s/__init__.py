"""The Kubernetes API (kubectl, the official clients) and Prometheus `/metrics` of the hosted
simulations: `api.KubernetesAPI` is the ASGI app, `endpoints`, `tables` and `discovery` what it
serves, `wire` what they share (Status failures, body decoding, answers)."""
