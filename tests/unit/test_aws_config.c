/*
 * test_aws_config.c - the AWS CLI's INI files as store/aws_config.c
 * parses them (ch_ini_*), and the order in which ch_aws_load takes the
 * credentials, the region and the endpoint from the environment and
 * those files.  Container credentials and the requests themselves are
 * tested against servers in tests/cli/aws_config.bats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/aws_config.h"
#include "store/testing.h"
#include "unit.h"

static const char *value(const struct ch_ini *ini, const char *section,
			 const char *key, const char *sub)
{
	const struct ch_ini_entry *e =
		ch_ini_get(ini, ch_ini_section(ini, section), key, sub);
	return e ? e->value : "(none)";
}

/* Keys lower-cased, names and values stripped, '#' and ';' comments
 * (indented ones too), ':' as a delimiter, the first delimiter splits. */
static void parses_sections_and_keys(void)
{
	struct ch_ini ini;
	struct ch_error err = { 0 };
	const char *text = "# a comment\n"
			   "[default]\n"
			   "AWS_Access_Key_ID = AKIA1\r\n"
			   "aws_secret_access_key=s=e:c\n"
			   "\n"
			   "; another\n"
			   "[ profile dev ]\n"
			   "  # indented comment\n"
			   "region: eu-west-1\n"
			   "endpoint_url = http://127.0.0.1:9000\n";
	if (!CHECK(ch_ini_parse(&ini, "cfg", text, &err) == 0)) {
		unit_note("%s", err.msg);
		return;
	}
	CHECK_EQ_U64(ini.nsections, 2);
	CHECK_STR(value(&ini, "default", "aws_access_key_id", NULL), "AKIA1");
	CHECK_STR(value(&ini, "default", "aws_secret_access_key", NULL),
		  "s=e:c");
	CHECK_STR(value(&ini, "profile dev", "region", NULL), "eu-west-1");
	CHECK_STR(value(&ini, "profile dev", "endpoint_url", NULL),
		  "http://127.0.0.1:9000");
	CHECK_STR(value(&ini, "dev", "region", NULL), "(none)");
	CHECK_EQ_U64(ch_ini_get(&ini, 1, "region", NULL)->line, 9);
	ch_ini_release(&ini);
}

/* Under `KEY =` with no value, indented lines are a nested section;
 * under a key with a value, they continue it. */
static void parses_nested_and_continued(void)
{
	struct ch_ini ini;
	struct ch_error err = { 0 };
	const char *text = "[services local]\n"
			   "s3 =\n"
			   "  endpoint_url = http://127.0.0.1:1\n"
			   "  Addressing_Style = path\n"
			   "  endpoint_url = http://127.0.0.1:2\n"
			   "[x]\n"
			   "long = a\n"
			   "\tb\n";
	if (!CHECK(ch_ini_parse(&ini, "cfg", text, &err) == 0)) {
		unit_note("%s", err.msg);
		return;
	}
	CHECK_STR(value(&ini, "services local", "s3", "endpoint_url"),
		  "http://127.0.0.1:2");
	CHECK_STR(value(&ini, "services local", "s3", "addressing_style"),
		  "path");
	CHECK_STR(value(&ini, "services local", "s3", NULL), "");
	CHECK_STR(value(&ini, "x", "long", NULL), "a\nb");
	ch_ini_release(&ini);
}

static void refuses(const char *text, const char *want)
{
	struct ch_ini ini;
	struct ch_error err = { 0 };
	int rc = ch_ini_parse(&ini, "/h/.aws/config", text, &err);
	unit_note("for %s: rc %d, '%s'", text, rc, err.msg);
	if (CHECK(rc == -1)) {
		CHECK(strstr(err.msg, want) != NULL);
		CHECK(err.kind == CH_ERR_USAGE);
	}
	CHECK_EQ_U64(ini.nentries + ini.nsections, 0);
}

/* What configparser (and so the AWS CLI) refuses, with file and line. */
static void refuses_what_the_cli_refuses(void)
{
	refuses("region = x\n", "/h/.aws/config line 1: 'KEY = VALUE' before "
				"any [SECTION]");
	refuses("[a]\nregion x\n", "/h/.aws/config line 2: neither");
	refuses("[a\n", "line 1: a section without ']'");
	refuses("[ ]\n", "line 1: an empty section name");
	refuses("[a]\n[b]\n\n[a]\n", "line 4: section [a] again (first on "
				    "line 1)");
	refuses("[a]\nk = 1\nK = 2\n", "line 3: 'k' again in [a] (first on "
				     "line 2)");
	refuses("[a]\n = 1\n", "line 2: no key before '='");
	refuses("[a]\ns3 =\n  endpoint_url\n", "line 3: a line under 's3 =' "
					      "without '='");
}

static void load_of_a_missing_file_is_empty(void)
{
	struct ch_ini ini;
	struct ch_error err = { 0 };
	int found = 1;
	CHECK(ch_ini_load(&ini, "/nonexistent/aws/config", &found, &err) == 0);
	CHECK(found == 0);
	CHECK_EQ_U64(ini.nsections, 0);
}

/* ------------------------------------------------------------------ */

static char dir[64];

static void write_file(const char *name, const char *text)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static const char *const vars[] = {
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL",
	"AWS_ENDPOINT_URL_S3", "AWS_PROFILE",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI",
	"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
};

/* A clean environment whose files are dir/credentials and dir/config. */
static void fresh_env(void)
{
	char path[128];
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	snprintf(path, sizeof(path), "%s/credentials", dir);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	snprintf(path, sizeof(path), "%s/config", dir);
	setenv("AWS_CONFIG_FILE", path, 1);
	write_file("credentials",
		   "[default]\n"
		   "aws_access_key_id = FILEKEY\n"
		   "aws_secret_access_key = FILESECRET\n"
		   "[dev]\n"
		   "aws_access_key_id = DEVKEY\n"
		   "aws_secret_access_key = DEVSECRET\n"
		   "aws_session_token = DEVTOKEN\n");
	write_file("config", "[default]\n"
			     "region = eu-west-3\n"
			     "[profile dev]\n"
			     "region = ap-south-1\n"
			     "endpoint_url = http://profile\n"
			     "services = local\n"
			     "[profile conf]\n"
			     "aws_access_key_id = CONFKEY\n"
			     "aws_secret_access_key = CONFSECRET\n"
			     "[profile roleonly]\n"
			     "role_arn = arn:aws:iam::1:role/x\n"
			     "[services local]\n"
			     "s3 =\n"
			     "  endpoint_url = http://services-s3\n");
}

static int loads(struct ch_aws *a)
{
	struct ch_error err = { 0 };
	int rc = ch_aws_load(a, "s3://b/p", &err);
	if (rc < 0)
		unit_note("ch_aws_load: %s", err.msg);
	return CHECK(rc == 0);
}

/* Environment variables win over the profile, piece by piece. */
static void env_wins_over_the_profile(void)
{
	struct ch_aws a;
	fresh_env();
	if (loads(&a)) {
		CHECK_STR(a.key_id, "FILEKEY");
		CHECK_STR(a.secret, "FILESECRET");
		CHECK(a.token == NULL);
		CHECK_STR(a.region, "eu-west-3");
		CHECK(a.endpoint == NULL);
		CHECK(a.cred_source && strstr(a.cred_source, "profile "
							     "'default' in "));
		ch_aws_release(&a);
	}
	setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "ENVSECRET", 1);
	setenv("AWS_DEFAULT_REGION", "us-west-2", 1);
	setenv("AWS_ENDPOINT_URL", "http://env", 1);
	if (loads(&a)) {
		CHECK_STR(a.key_id, "ENVKEY");
		CHECK_STR(a.region, "us-west-2");
		CHECK_STR(a.endpoint, "http://env");
		CHECK(a.cred_source == NULL);
		ch_aws_release(&a);
	}
	setenv("AWS_REGION", "ca-central-1", 1);
	setenv("AWS_ENDPOINT_URL_S3", "http://env-s3", 1);
	if (loads(&a)) {
		CHECK_STR(a.region, "ca-central-1");
		CHECK_STR(a.endpoint, "http://env-s3");
		ch_aws_release(&a);
	}
}

/* AWS_PROFILE picks the section; the services section's s3 endpoint
 * beats the profile's endpoint_url; the config file's credentials
 * count when the credentials file has none for the profile. */
static void profile_picks_sections(void)
{
	struct ch_aws a;
	fresh_env();
	setenv("AWS_PROFILE", "dev", 1);
	if (loads(&a)) {
		CHECK_STR(a.key_id, "DEVKEY");
		CHECK_STR(a.token, "DEVTOKEN");
		CHECK_STR(a.region, "ap-south-1");
		CHECK_STR(a.endpoint, "http://services-s3");
		ch_aws_release(&a);
	}
	setenv("AWS_PROFILE", "conf", 1);
	if (loads(&a)) {
		CHECK_STR(a.key_id, "CONFKEY");
		CHECK_STR(a.region, "us-east-1");
		ch_aws_release(&a);
	}
}

static void fails_with(const char *want, enum ch_error_kind kind)
{
	struct ch_aws a;
	struct ch_error err = { 0 };
	int rc = ch_aws_load(&a, "s3://b/p", &err);
	unit_note("rc %d, '%s'", rc, err.msg);
	if (CHECK(rc == -1)) {
		CHECK(strstr(err.msg, want) != NULL);
		CHECK(err.kind == kind);
	}
	CHECK(a.key_id == NULL && a.secret == NULL);
}

static void errors_say_where(void)
{
	char want[512];
	fresh_env();
	setenv("AWS_PROFILE", "nope", 1);
	snprintf(want, sizeof(want),
		 "AWS profile 'nope' (AWS_PROFILE) is in neither "
		 "%s/credentials nor %s/config (profiles there: default, "
		 "dev, conf, roleonly)",
		 dir, dir);
	fails_with(want, CH_ERR_USAGE);

	setenv("AWS_PROFILE", "roleonly", 1);
	snprintf(want, sizeof(want),
		 "no S3 credentials for 's3://b/p': looked in the environment "
		 "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY unset), then "
		 "profile 'roleonly' in %s/credentials (no such profile), "
		 "then profile 'roleonly' in %s/config (no aws_access_key_id;",
		 dir, dir);
	fails_with(want, CH_ERR_IO);
	fails_with("then a container endpoint "
		   "(AWS_CONTAINER_CREDENTIALS_FULL_URI and "
		   "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI unset)",
		   CH_ERR_IO);

	unsetenv("AWS_PROFILE");
	setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
	fails_with("AWS_ACCESS_KEY_ID is set, AWS_SECRET_ACCESS_KEY is not",
		   CH_ERR_USAGE);

	unsetenv("AWS_ACCESS_KEY_ID");
	write_file("credentials", "[default]\naws_access_key_id = K\n");
	snprintf(want, sizeof(want),
		 "%s/credentials line 2: profile 'default' has "
		 "aws_access_key_id but no aws_secret_access_key", dir);
	fails_with(want, CH_ERR_USAGE);

	write_file("config", "[default]\nregion\n");
	snprintf(want, sizeof(want), "%s/config line 2: neither", dir);
	fails_with(want, CH_ERR_USAGE);

	write_file("config", "[profile x]\nservices = gone\n");
	write_file("credentials", "[x]\naws_access_key_id = K\n"
				  "aws_secret_access_key = S\n");
	setenv("AWS_PROFILE", "x", 1);
	snprintf(want, sizeof(want),
		 "%s/config line 2: profile 'x' names services 'gone', but "
		 "%s/config has no [services gone] section", dir, dir);
	fails_with(want, CH_ERR_USAGE);
	unsetenv("AWS_PROFILE");
}

/* Only loopback and AWS's own container hosts get the token. */
static void container_host_is_checked(void)
{
	struct ch_aws a = { 0 };
	struct ch_error err = { 0 };
	CHECK(ch_aws_container_fetch(&a, "http://169.254.169.254.evil/x",
				     "tok", &err) == -1);
	CHECK(strstr(err.msg, "its host '169.254.169.254.evil' is neither") !=
	      NULL);
	CHECK(ch_aws_container_fetch(&a, "http://u@example.com:80/x", "tok",
				     &err) == -1);
	CHECK(strstr(err.msg, "host 'example.com'") != NULL);
	CHECK(ch_aws_container_fetch(&a, "http://127.evil.com/x", "tok",
				     &err) == -1);
	CHECK(strstr(err.msg, "host '127.evil.com'") != NULL);
	CHECK(a.key_id == NULL);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(parses_sections_and_keys),
		UNIT(parses_nested_and_continued),
		UNIT(refuses_what_the_cli_refuses),
		UNIT(load_of_a_missing_file_is_empty),
		UNIT(env_wins_over_the_profile),
		UNIT(profile_picks_sections),
		UNIT(errors_say_where),
		UNIT(container_host_is_checked),
	};
	snprintf(dir, sizeof(dir), "/tmp/test_aws_config.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	int rc = unit_run(tests, UNIT_COUNT(tests));
	char path[128];
	snprintf(path, sizeof(path), "%s/credentials", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/config", dir);
	unlink(path);
	rmdir(dir);
	return rc;
}
