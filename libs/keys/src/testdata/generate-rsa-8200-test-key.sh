#!/bin/sh
# Regenerates rsa-8200-test-key.pem: a throwaway RSA key one size past what Go accepts (8192
# bits), for kubelet-csr-attacks.test.ts. Stored because generating it takes 20 to 70 s; it signs
# nothing but that test's requests.
set -eu
cd "$(dirname "$0")"
{
  echo "Test key only: an RSA key one bit-size past what Go accepts (8192), for kubelet-csr-attacks.test.ts."
  echo "Generating one takes 20 to 70 s, so it is stored (generate-rsa-8200-test-key.sh). Never used for anything else."
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:8200 2>/dev/null
} > rsa-8200-test-key.pem.new
mv rsa-8200-test-key.pem.new rsa-8200-test-key.pem
