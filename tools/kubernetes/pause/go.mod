// The pod sandbox program of mini's pause image (tools/kubernetes/images.mjs).
module constellation.local/tools/kubernetes/pause

go 1.26.0
