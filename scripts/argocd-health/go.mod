module sluice.dev/tools/argocd-health

go 1.24

require (
	github.com/yuin/gopher-lua v1.1.2
	layeh.com/gopher-json v0.0.0-20190114024228-97fed8db8427
	sigs.k8s.io/yaml v1.6.0
)

require go.yaml.in/yaml/v2 v2.4.2 // indirect
