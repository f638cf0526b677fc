#!/usr/bin/env bats
# S3 credentials, region and endpoint as the AWS CLI finds them
# (chute-remote(7), "S3 credentials and configuration"): the environment,
# AWS_PROFILE, the credentials and config files, a container endpoint.
# s3rver checks only the access key id (an unknown one gets 403), so a
# test proves which credentials were used by giving the wrong id
# everywhere but in the place that must win.  tests/cli/aws_server.py
# stands in for a container endpoint, and for an S3 endpoint that logs
# the key id, region and session token it was sent.

load helper
load servers

STORE_TOOL="${CHUTE_BIN%/*}/tests/store_tool"

setup() {
	chute_setup
	mkdir -p aws
	export AWS_SHARED_CREDENTIALS_FILE=$BATS_TEST_TMPDIR/aws/credentials
	export AWS_CONFIG_FILE=$BATS_TEST_TMPDIR/aws/config
	SECRET=sEcReT-$RANDOM-value
	TOKEN=tOkEn-$RANDOM-value
}

teardown() {
	stop_servers
	stop_aws_server
}

st() {
	"$STORE_TOOL" "$@"
}

# s3 BUCKET: s3rver with the environment's keys taken away.
s3() {
	start_s3rver "$BATS_TEST_TMPDIR/s3" "$1"
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
}

# profile FILE NAME ID [KEY=VALUE...]: appends a section with that key id.
profile() {
	local file=aws/$1 name=$2 id=$3
	shift 3
	{
		echo "[$name]"
		echo "aws_access_key_id = $id"
		echo "aws_secret_access_key = $SECRET"
		printf '%s\n' "$@"
	} >>"$file"
}

start_aws_server() {
	AWS_DIR=$BATS_TEST_TMPDIR/aws_server
	mkdir -p "$AWS_DIR"
	_detached "$PYTHON" "$REPO_ROOT/tests/cli/aws_server.py" "$AWS_DIR" \
		</dev/null >"$AWS_DIR.log" 2>&1 &
	AWS_SERVER_PID=$!
	_watch "$AWS_SERVER_PID"
	local i
	for i in $(seq 1 200); do
		[ -f "$AWS_DIR/port" ] && break
		kill -0 "$AWS_SERVER_PID" 2>/dev/null ||
			fail "aws_server.py died: $(cat "$AWS_DIR.log")"
		sleep 0.05
	done
	AWS_SERVER=http://127.0.0.1:$(cat "$AWS_DIR/port")
}

stop_aws_server() {
	[ -n "${AWS_SERVER_PID:-}" ] || return 0
	kill "$AWS_SERVER_PID" 2>/dev/null
	wait "$AWS_SERVER_PID" 2>/dev/null
	AWS_SERVER_PID=
}

# container ID: the endpoint answers credentials with key id ID.
container() {
	printf '{"AccessKeyId": "%s", "SecretAccessKey": "%s", "Token": "%s", "Expiration": "2999-01-01T00:00:00Z"}' \
		"$1" "$SECRET" "$TOKEN" >"$AWS_DIR/answer.json"
}

# works: a put and a stat through s3rver with whatever credentials win.
works() {
	echo hi >f
	run -0 st s3://bkt/pre put f f
	run -0 st s3://bkt/pre stat f
	assert_output "exists 3"
}

refused_for() {
	echo hi >f
	run -1 st s3://bkt/pre put f f
	assert_output --partial "InvalidAccessKeyId"
	assert_output --partial "check the credentials ($1)"
	refute_output --partial "$SECRET"
}

@test "aws: the default profile of the credentials file, without keys in the environment, and a push through it" {
	s3 bkt
	profile credentials default S3RVER
	works
	mkfixture src
	chute pack -o ds src >/dev/null
	run -0 chute push ds s3://bkt/ds
	run -0 chute pull s3://bkt/ds back
	# the file is really read: a wrong id in it is refused, and named
	: >aws/credentials
	profile credentials default WRONG
	refused_for "profile 'default' in $BATS_TEST_TMPDIR/aws/credentials"
}

@test "aws: keys in the environment win over the profile" {
	s3 bkt
	profile credentials default WRONG
	AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=$SECRET works
	: >aws/credentials
	profile credentials default S3RVER
	AWS_ACCESS_KEY_ID=WRONG AWS_SECRET_ACCESS_KEY=$SECRET \
		refused_for AWS_ACCESS_KEY_ID
	# also when AWS_PROFILE names a profile: only --profile would change
	# that in the AWS CLI, and chute has none
	AWS_PROFILE=default AWS_ACCESS_KEY_ID=WRONG \
		AWS_SECRET_ACCESS_KEY=$SECRET refused_for AWS_ACCESS_KEY_ID
}

@test "aws: AWS_PROFILE picks the section; the credentials file before the config file" {
	s3 bkt
	profile credentials default WRONG
	profile credentials dev S3RVER
	profile config "profile dev" WRONG
	AWS_PROFILE=dev works
	refused_for "profile 'default' in $BATS_TEST_TMPDIR/aws/credentials"
	# the config file's keys count when the credentials file has none
	profile config "profile ci" S3RVER
	profile config default WRONG
	AWS_PROFILE=ci works
	: >aws/credentials
	refused_for "profile 'default' in $BATS_TEST_TMPDIR/aws/config"
}

@test "aws: region, endpoint_url and session token of the profile reach the server" {
	start_aws_server
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN \
		AWS_REGION AWS_DEFAULT_REGION AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3
	profile credentials dev DEVKEY "aws_session_token = $TOKEN"
	printf '[profile dev]\nregion = ap-south-1\nendpoint_url = %s\n' \
		"$AWS_SERVER" >aws/config
	AWS_PROFILE=dev run -0 st s3://bkt/pre stat f
	assert_output "missing"
	run -0 tail -n 1 "$AWS_DIR/requests.log"
	assert_output "HEAD /bkt/pre/f id=DEVKEY region=ap-south-1 token=$TOKEN auth=-"
	# the environment's region wins, AWS_REGION over AWS_DEFAULT_REGION
	AWS_PROFILE=dev AWS_DEFAULT_REGION=eu-north-1 run -0 st s3://bkt/pre stat f
	AWS_PROFILE=dev AWS_DEFAULT_REGION=eu-north-1 AWS_REGION=sa-east-1 \
		run -0 st s3://bkt/pre stat f
	run -0 awk '{print $4}' "$AWS_DIR/requests.log"
	assert_output "region=ap-south-1
region=eu-north-1
region=sa-east-1"
	# no secret in what chute says about the remote, failing or not
	AWS_PROFILE=dev run -1 st s3://bkt/pre get f
	refute_output --partial "$SECRET"
	refute_output --partial "$TOKEN"
}

@test "aws: the endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the services section's s3, the profile's endpoint_url" {
	s3 bkt
	local s3rver=$AWS_ENDPOINT_URL dead=http://127.0.0.1:$(free_port)
	unset AWS_ENDPOINT_URL
	profile credentials default S3RVER
	printf '[default]\nendpoint_url = %s\n' "$s3rver" >aws/config
	works
	printf '[default]\nendpoint_url = %s\nservices = here\n[services here]\ns3 =\n  endpoint_url = %s\n' \
		"$dead" "$s3rver" >aws/config
	works
	printf '[default]\nendpoint_url = %s\n' "$dead" >aws/config
	AWS_ENDPOINT_URL=$s3rver works
	AWS_ENDPOINT_URL=$dead AWS_ENDPOINT_URL_S3=$s3rver works
	run -1 st --retries -1 s3://bkt/pre stat f
	assert_output --partial "Failed to connect to 127.0.0.1 port ${dead##*:}"
}

@test "aws: container credentials from AWS_CONTAINER_CREDENTIALS_FULL_URI, with the Authorization token" {
	s3 bkt
	start_aws_server
	container S3RVER
	printf 'Bearer %s' "$TOKEN-auth" >"$AWS_DIR/token"
	export AWS_CONTAINER_CREDENTIALS_FULL_URI=$AWS_SERVER/creds
	AWS_CONTAINER_AUTHORIZATION_TOKEN="Bearer $TOKEN-auth" works
	run -0 tail -n 1 "$AWS_DIR/requests.log"
	assert_output "GET /creds id=- region=- token=- auth=ok"
	# the token file wins over the variable
	echo "Bearer $TOKEN-auth" >tokenfile
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=$PWD/tokenfile \
		AWS_CONTAINER_AUTHORIZATION_TOKEN=nope works
	# a wrong token: refused, exit 2, the token never shown
	AWS_CONTAINER_AUTHORIZATION_TOKEN="Bearer $TOKEN-wrong" \
		run -2 chute pull s3://bkt/pre back
	assert_output --partial "the container endpoint $AWS_SERVER/creds refused chute (HTTP 401)"
	refute_output --partial "$TOKEN"
	# the answer's key id is the one used, and named when refused
	container WRONG
	AWS_CONTAINER_AUTHORIZATION_TOKEN="Bearer $TOKEN-auth" \
		refused_for "the container endpoint $AWS_SERVER/creds"
	refute_output --partial "$TOKEN"
	# a profile with keys comes before the container
	profile credentials default S3RVER
	AWS_CONTAINER_AUTHORIZATION_TOKEN="Bearer $TOKEN-auth" works
}

@test "aws: a container URI on another host is refused before the token is sent" {
	s3 bkt
	AWS_CONTAINER_CREDENTIALS_FULL_URI=http://example.com/creds \
		AWS_CONTAINER_AUTHORIZATION_TOKEN=$TOKEN \
		run -2 chute pull s3://bkt/pre back
	assert_output --partial "its host 'example.com' is neither a loopback address"
	refute_output --partial "$TOKEN"
}

@test "aws: no credentials anywhere: exit 2 and the places looked at, in order" {
	s3 bkt
	printf '[profile other]\nregion = x\n' >aws/config
	run -2 chute pull s3://bkt/pre back
	assert_output --partial "no S3 credentials for 's3://bkt/pre': looked in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY unset), then profile 'default' in $BATS_TEST_TMPDIR/aws/credentials (no such file), then profile 'default' in $BATS_TEST_TMPDIR/aws/config (no such profile), then a container endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI and AWS_CONTAINER_CREDENTIALS_RELATIVE_URI unset)"
	# half the keys is an error of its own
	AWS_ACCESS_KEY_ID=S3RVER run -2 chute pull s3://bkt/pre back
	assert_output --partial "AWS_ACCESS_KEY_ID is set, AWS_SECRET_ACCESS_KEY is not"
	echo "[default]" >aws/credentials
	echo "aws_access_key_id = S3RVER" >>aws/credentials
	run -2 chute pull s3://bkt/pre back
	assert_output --partial "aws/credentials line 2: profile 'default' has aws_access_key_id but no aws_secret_access_key"
}

@test "aws: a profile in neither file: exit 2 naming it, both files and the profiles there" {
	s3 bkt
	profile credentials default S3RVER
	profile config "profile dev" S3RVER
	AWS_PROFILE=prod run -2 chute pull s3://bkt/pre back
	assert_output --partial "AWS profile 'prod' (AWS_PROFILE) is in neither $BATS_TEST_TMPDIR/aws/credentials nor $BATS_TEST_TMPDIR/aws/config (profiles there: default, dev)"
}

@test "aws: a file that does not parse: exit 2 with the file and line" {
	s3 bkt
	profile credentials default S3RVER
	printf '[default]\nregion = eu-west-1\nthis is not a key\n' >aws/config
	run -2 chute pull s3://bkt/pre back
	assert_output --partial "$BATS_TEST_TMPDIR/aws/config line 3: neither '[SECTION]' nor 'KEY = VALUE'"
	printf '[default]\nregion = a\n[default]\n' >aws/config
	run -2 chute pull s3://bkt/pre back
	assert_output --partial "aws/config line 3: section [default] again (first on line 1)"
	# even when the environment holds all it needs, as with the AWS CLI
	AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=x AWS_REGION=x \
		run -2 chute pull s3://bkt/pre back
	assert_output --partial "aws/config line 3"
}
