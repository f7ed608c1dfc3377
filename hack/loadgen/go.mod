module turnstile.local/loadgen

go 1.26
