package envoyconfig

// A cluster's message is reused only while the secrets it names still exist with the
// kinds it needs (clusterRefsResolve). At 10,000 mutual-TLS Backends that check is
// 20,000 lookups by name on every build, 2.7 ms of a one-Backend change's 13 ms of build
// (BenchmarkOneBackendChanged, 2026-12-03), although a change rarely touches a secret.
// So the secrets are built first, and when every one of them is the last build's (the
// same names in the same places, none built afresh), each name has the kind it had:
// every cluster the memo holds, whose references resolved in the last build (a build
// that fails drops the memo, and the memo holds only the clusters of the build that made
// it), resolves now as well.

// sameSecretsAsLastBuild tells, after the secrets were built with fresh of them built
// afresh, whether they are those of the Gateway's last build, by name and kind.
func (b *builder) sameSecretsAsLastBuild(fresh int) bool {
	return b.memo.keeps() && fresh == 0 && b.secretsInPlace
}
