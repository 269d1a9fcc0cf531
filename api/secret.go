package api

// Secret is a credential airlock's proxy puts into a run's requests to its
// hosts, so that it never enters the sandbox (Spec.Secrets). It is written
// (server config, PUT /v1/secrets/{name}) and never read back.
type Secret struct {
	// Name is the variable the run sees: letters, digits and _.
	Name string `json:"name"`
	// Value is the credential.
	Value string `json:"value"`
	// Hosts are the patterns of the hosts the secret is for, as in
	// Spec.Egress ("github.com", "*.example.com:8443"); a run that asks for
	// the secret may reach them.
	Hosts []string `json:"hosts"`
	// Header, when set, is set on every request to the hosts:
	// "Authorization: Bearer {value}", {value} standing for Value. Without
	// it (and without BasicUser) the placeholder the sandbox holds is
	// replaced by the value wherever it appears in a request's headers.
	Header string `json:"header,omitempty"`
	// BasicUser, when set, sets "Authorization: Basic" of BasicUser:Value on
	// every request to the hosts, as git sends a user and token.
	BasicUser string `json:"basic_user,omitempty"`
}

// SecretInfo is a secret as the API lists it: everything but its value.
type SecretInfo struct {
	Name      string   `json:"name"`
	Hosts     []string `json:"hosts"`
	Header    string   `json:"header,omitempty"`
	BasicUser string   `json:"basic_user,omitempty"`
}

// SecretList is the answer of GET /v1/secrets: the secrets a tenant may
// name, its own and the operator's, without values.
type SecretList struct {
	Secrets []SecretInfo `json:"secrets"`
}
