module sluice.local/kube/pause

go 1.26.0
