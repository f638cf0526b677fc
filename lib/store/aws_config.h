/* store/aws_config.h - an S3 store's credentials, region and endpoint,
 * found as the AWS CLI finds them: the environment, the shared
 * credentials and config files (store/aws_config.c) and a container's
 * credentials endpoint (store/aws_container.c).  chute-remote(7), "S3
 * credentials and configuration", is the contract. */
#ifndef CH_STORE_AWS_CONFIG_H
#define CH_STORE_AWS_CONFIG_H

#include <stddef.h>

#include "chute/common.h"

/* ------------------------------------------------------------------ */
/* One INI file as botocore's configparser reads it: `[SECTION]` lines,
 * `KEY = VALUE` (or `KEY: VALUE`) lines, keys lower-cased, values and
 * names stripped, whole-line comments starting with '#' or ';'.  An
 * indented line continues the key above it; under a key with an empty
 * value, indented `SUB = VALUE` lines are a nested section (`s3 =` then
 * `  endpoint_url = ...`).  A key before any section, a line that is
 * none of these, a section or a key given twice are errors naming the
 * file and line, as the AWS CLI refuses them. */

struct ch_ini_entry {
	size_t section; /* index in sections */
	char *key;	/* lower case */
	char *sub;	/* nested key under key, or NULL */
	char *value;
	int line;
};

struct ch_ini {
	char *path; /* for messages */
	char **sections;
	size_t nsections;
	struct ch_ini_entry *entries;
	size_t nentries;
};

/* ------------------------------------------------------------------ */
/* What an S3 store signs with and where it sends its requests. */

struct ch_aws {
	char *key_id, *secret, *token; /* token may be NULL */
	char *region;		       /* never NULL once loaded */
	char *endpoint;		       /* NULL: AWS itself */
	/* Where the credentials came from when not the environment, for
	 * a 403's hint: "profile 'dev' in /home/u/.aws/credentials". */
	char *cred_source;
};

/* Fills a for url (named in messages): credentials from the
 * environment, else the profile (AWS_PROFILE, else "default") in the
 * credentials file, else in the config file, else the container
 * endpoint; region and endpoint from the environment, else the
 * profile.  A profile named by AWS_PROFILE that is in neither file, a
 * file that does not parse and credentials that are half there are
 * usage errors; none found at all is an error listing where chute
 * looked.  No secret is ever put in a message. */
int ch_aws_load(struct ch_aws *a, const char *url, struct ch_error *err);

/* Container credentials (store/aws_container.c): GET uri with the
 * Authorization header auth (NULL: none), the answer's AccessKeyId,
 * SecretAccessKey and Token into a.  uri must be on a loopback address
 * or one of the container hosts AWS uses (169.254.170.2,
 * 169.254.170.23, fd00:ec2::23), as botocore requires, so that the
 * token goes nowhere else. */
int ch_aws_container_fetch(struct ch_aws *a, const char *uri,
			   const char *auth, struct ch_error *err);

#endif
