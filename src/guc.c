/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The flakeid.* configuration parameters.
 *
 * The layout parameters (flakeid.epoch, flakeid.node_bits) are fixed for the
 * life of the server when the library is preloaded.  Without preloading a
 * postmaster-context parameter cannot be defined, so they are then read
 * from the configuration file like any reloadable parameter; no session can
 * SET them either way.
 *
 * Without preloading, the library is loaded in a session after the
 * session's connection options and its role's and database's settings
 * were given to the parameters' placeholders.  PostgreSQL then refuses
 * such a value for a parameter only the configuration may set, and the
 * parameter takes its default, not the configuration's value: such a
 * session's view of the server's settings is wrong.  It is noted here
 * (FlakeSettingsFromConfig()), so that the session neither sets the
 * generator up nor generates with that view.
 *
 * A parallel worker loads the library with the server's configuration,
 * and only then takes its leader's settings, which PostgreSQL first resets
 * to their defaults: what a worker's parameters say when the library
 * loads is not its leader's view, and what they say later may be the
 * defaults.  So a parallel worker never sets the generator up
 * (FlakeMaySetUp()), and learns whether its leader's settings are the
 * configuration's from flakeid.foreign_setting, an internal parameter that
 * the leader sets when the library loads and that PostgreSQL passes to its
 * workers with the rest of its settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "clock.h"
#include "compat.h"
#include "epoch.h"
#include "guc.h"
#include "layout.h"
#include "mode.h"
#include "record.h"

/*
 * The layout settings as this process applied them, kept in step by their
 * assign hooks.
 */
static FlakeLayout guc_layout = {FLAKE_DEFAULT_EPOCH_MS, FLAKE_DEFAULT_NODE_BITS};

/* Bumped by every change of a layout setting in this process. */
uint64		flake_layout_settings_gen = 0;

/* The first layout setting whose configured value was rejected, or NULL. */
static const char *rejected_layout_setting = NULL;

int			flake_node_id = FLAKE_NODE_UNSET;
int			flake_max_lead_ms = FLAKE_DEFAULT_MAX_LEAD_MS;
int			flake_max_clock_wait_ms = FLAKE_DEFAULT_MAX_CLOCK_WAIT_MS;
int			flake_max_lease_wait_ms = FLAKE_DEFAULT_MAX_LEASE_WAIT_MS;
int			flake_max_clock_skew_ms = FLAKE_DEFAULT_MAX_CLOCK_SKEW_MS;
int			flake_max_batch = FLAKE_DEFAULT_MAX_BATCH;
int			flake_cache = 1;

static int	node_bits_guc = FLAKE_DEFAULT_NODE_BITS;
static char *epoch_guc = NULL;

/*
 * The first parameter that only the configuration may set and that this
 * session was given a value for from elsewhere, and where from; NULL when
 * the session's settings are the configuration's.
 */
static const char *foreign_setting = NULL;
static GucSource foreign_source = PGC_S_DEFAULT;

/*
 * flakeid.foreign_setting: empty, or where from and which parameter, as
 * "client flakeid.node_id" or "role flakeid.epoch".  Set by a session when
 * the library loads; a parallel worker has its leader's.
 */
static char *foreign_setting_guc = NULL;

#define FOREIGN_FROM_CLIENT		"client"
#define FOREIGN_FROM_ROLE		"role"

/* The parameters that only the server's configuration may set. */
static const char *const config_only_settings[] = {
	"flakeid.epoch", "flakeid.node_bits", "flakeid.node_id",
	"flakeid.max_lead", "flakeid.max_clock_wait", "flakeid.max_lease_wait",
	"flakeid.max_clock_skew"
};

/* Whether the parameters are defined: later assignments are reloads. */
static bool gucs_defined = false;

/*
 * The largest flakeid.max_lead that a reload of this process lowered, and
 * until when (ns of the monotonic clock) it counts for the floor after
 * archive recovery; see FlakeFloorLeadMs().
 */
static int	lead_high_ms = 0;
static int64 lead_high_until_ns = 0;

/*
 * A reload that lowers flakeid.max_lead leaves IDs up to the old lead
 * ahead of the clock: the floor keeps counting with it until that lead, a
 * lease and flakeid.max_clock_skew have passed.  Not for the value the
 * library starts with.  Every process that takes the reload in notes it,
 * the postmaster too, whose children started later inherit it: the lease
 * worker of a standby that is promoted starts after the promotion.  The
 * largest value and the latest end win; the monotonic clock measures the
 * time, so that no step of the wall clock shortens it.
 */
static void
AssignMaxLead(int newval, void *extra)
{
	int64		until;

	(void) extra;
	if (!gucs_defined || newval >= flake_max_lead_ms)
		return;
	until = FlakeMonotonicNs() +
		((int64) flake_max_lead_ms + FLAKE_LEASE_MS + flake_max_clock_skew_ms) * 1000000;
	lead_high_ms = Max(lead_high_ms, flake_max_lead_ms);
	lead_high_until_ns = Max(lead_high_until_ns, until);
}

/*
 * The lead that the floor after archive recovery allows for: the largest
 * flakeid.max_lead in force here within the time its IDs can still be
 * ahead of the clock, not only the value now.
 */
int64
FlakeFloorLeadMs(void)
{
	if (lead_high_ms > flake_max_lead_ms && FlakeMonotonicNs() < lead_high_until_ns)
		return lead_high_ms;
	return flake_max_lead_ms;
}

#define EPOCH_FORMAT_DETAIL \
	"flakeid.epoch must be an ISO-8601 UTC timestamp from 1970 on, such as \"" \
	FLAKE_DEFAULT_EPOCH "\"."

static bool
CheckEpoch(char **newval, void **extra, GucSource source)
{
	int64		ms;
	int64	   *copy;

	(void) source;
	if (*newval == NULL || !FlakeParseEpoch(*newval, &ms))
	{
		GUC_check_errdetail(EPOCH_FORMAT_DETAIL);
		return false;
	}
	copy = FlakeGucMalloc(sizeof(int64));
	if (copy == NULL)
		return false;
	*copy = ms;
	*extra = copy;
	return true;
}

static void
AssignEpoch(const char *newval, void *extra)
{
	(void) newval;
	guc_layout.epoch_ms = *(int64 *) extra;
	flake_layout_settings_gen++;
}

static void
AssignNodeBits(int newval, void *extra)
{
	(void) extra;
	guc_layout.node_bits = newval;
	flake_layout_settings_gen++;
}

/* Why a node id is refused, at startup and on reload alike. */
#define NODE_RANGE_DETAIL \
	"With flakeid.node_bits = %d the node id must be between 0 and %d."
#define NODE_RANGE_HINT \
	"Choose a node id that fits, or raise flakeid.node_bits on every server whose IDs meet."

static bool
CheckNodeId(int *newval, void **extra, GucSource source)
{
	(void) extra;
	(void) source;
	if (*newval != FLAKE_NODE_UNSET && !FlakeNodeFits(&guc_layout, *newval))
	{
		GUC_check_errdetail(NODE_RANGE_DETAIL,
							guc_layout.node_bits, FlakeMaxNode(&guc_layout));
		GUC_check_errhint(NODE_RANGE_HINT);
		return false;
	}
	return true;
}

/*
 * Preloaded, the layout is fixed for the life of the server.  Without
 * preloading a restart-only parameter cannot be defined after startup, so
 * the layout is then read like a reloadable one; the generator keeps the
 * layout it started with all the same.
 */
static GucContext
LayoutContext(void)
{
	return FlakeLayoutFixed() ? PGC_POSTMASTER : PGC_SIGHUP;
}

/*
 * The value the server's configuration gives a parameter not yet defined,
 * or NULL: the placeholder's reset value, which a session's SET before
 * the library was loaded does not change.  Without preloading, a
 * placeholder whose setting was removed from the configuration by a reload
 * is left empty, which is no value either; at startup an empty value is
 * what the configuration says.
 */
static char *
ConfiguredValue(const char *name)
{
	const char *raw;

	if (GetConfigOption(name, true, false) == NULL)
		return NULL;
	raw = GetConfigOptionResetString(name);
	if (raw == NULL || (raw[0] == '\0' && !FlakePreloaded()))
		return NULL;
	return pstrdup(raw);
}

/* Whether raw is missing or, read as an integer, is what was applied. */
static bool
IntApplied(const char *raw, int applied)
{
	int			value;

	return raw == NULL || (parse_int(raw, &value, 0, NULL) && value == applied);
}

/*
 * A configured value was rejected, and PostgreSQL kept the default in its
 * place: another node's id, or another layout.  Preloaded, refuse to
 * start, in the words PostgreSQL uses for a reload it refuses (an integer
 * unquoted, as PostgreSQL writes it); otherwise leave the node id unset or
 * mark the layout invalid, so that nothing is generated (or decoded) with
 * the default.
 */
static void
Rejected(const char *name, const char *raw, const char *detail,
		 const char *hint)
{
	int			value;

	if (!FlakePreloaded())
	{
		if (strcmp(name, "flakeid.node_id") != 0 && rejected_layout_setting == NULL)
			rejected_layout_setting = name;
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 parse_int(raw, &value, 0, NULL) ?
			 errmsg("invalid value for parameter \"%s\": %d", name, value) :
			 errmsg("invalid value for parameter \"%s\": \"%s\"", name, raw),
			 errdetail_internal("%s", detail),
			 errhint("%s", hint)));
}

#define LAYOUT_REJECTED_HINT \
	"Correct the setting in the server's configuration; " \
	"flakeid does not start with a default in its place."

/*
 * Note the first configuration-only parameter whose placeholder got its
 * value from outside the configuration: the connection's options, or the
 * role's or database's settings.
 */
static void
NoteForeignSettings(void)
{
	for (int i = 0; i < (int) lengthof(config_only_settings); i++)
	{
		GucSource	source = FlakeGucResetSource(config_only_settings[i]);

		if (source > PGC_S_ARGV && foreign_setting == NULL)
		{
			foreign_setting = config_only_settings[i];
			foreign_source = source;
		}
	}
}

/*
 * The foreign setting of this session, or of a parallel worker's leader:
 * false when there is none, else true with the parameter's name and
 * whether it came from the connection's options.
 */
static bool
ForeignSetting(const char **name, bool *from_client)
{
	const char *value = foreign_setting_guc;
	const char *space;

	if (foreign_setting != NULL)
	{
		*name = foreign_setting;
		*from_client = (foreign_source == PGC_S_CLIENT);
		return true;
	}
	if (!IsParallelWorker() || value == NULL || value[0] == '\0')
		return false;
	space = strchr(value, ' ');
	*name = space ? space + 1 : value;
	*from_client = strncmp(value, FOREIGN_FROM_CLIENT " ",
						   strlen(FOREIGN_FROM_CLIENT) + 1) == 0;
	return true;
}

/*
 * Whether this process's settings are the server's configuration: false in
 * a session that was given a configuration-only setting from elsewhere
 * before the library was loaded, and in its parallel workers.
 */
bool
FlakeSettingsFromConfig(void)
{
	const char *name;
	bool		from_client;

	return !ForeignSetting(&name, &from_client);
}

/*
 * Whether this process may set the generator up from its own settings:
 * they are the configuration's, and it is not a parallel worker, whose
 * settings are reset to their defaults before its leader's arrive.
 */
bool
FlakeMaySetUp(void)
{
	return !IsParallelWorker() && FlakeSettingsFromConfig();
}

/* Such a session, or its parallel worker, does not generate IDs: say why. */
void
FlakeReportForeignSetting(void)
{
	const char *name = NULL;
	bool		from_client = false;
	const char *where;

	(void) ForeignSetting(&name, &from_client);
	where = from_client ?
		"the connection's options" : "the role's or the database's settings";
	ereport(ERROR,
			(errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM),
			 errmsg("parameter \"%s\" of this session was set outside the server's configuration",
					name),
			 errdetail("This session's value came from %s. Only the server's configuration sets it, "
					   "so this session does not know the server's value and does not generate IDs.",
					   where),
			 errhint("Remove \"%s\" from %s, and connect again.",
					 name, where)));
}

/*
 * Define flakeid.foreign_setting and, in a session with a foreign setting
 * (not a parallel worker, which takes its leader's), give it that setting.
 * No session can SET it after the start, nor give it at the start unless
 * it is a superuser's.
 */
static void
DefineForeignSetting(void)
{
	char	   *value;

	DefineCustomStringVariable("flakeid.foreign_setting",
							   "Internal: a configuration-only flakeid parameter that this session was given from elsewhere.",
							   "Passed to the session's parallel workers, which then refuse to generate as the session does.",
							   &foreign_setting_guc,
							   "",
							   PGC_SU_BACKEND,
							   GUC_NO_SHOW_ALL | GUC_NO_RESET_ALL | GUC_NOT_IN_SAMPLE |
							   GUC_DISALLOW_IN_FILE | GUC_DISALLOW_IN_AUTO_FILE |
							   FLAKE_GUC_ALLOW_IN_PARALLEL,
							   NULL, NULL, NULL);
	if (IsParallelWorker() || FlakePreloaded() || foreign_setting == NULL)
		return;
	/* loaded in parallel mode (for a type's output) without the flag */
	if (IsInParallelMode() && FLAKE_GUC_ALLOW_IN_PARALLEL == 0)
		return;
	value = psprintf("%s %s", foreign_source == PGC_S_CLIENT ?
					 FOREIGN_FROM_CLIENT : FOREIGN_FROM_ROLE, foreign_setting);
	SetConfigOption("flakeid.foreign_setting", value, PGC_SU_BACKEND,
					PGC_S_OVERRIDE);
}

/*
 * Define every flakeid parameter.  The layout comes first: the node id is
 * checked against the node bits.
 */
void
FlakeDefineGucs(void)
{
	char	   *raw_epoch;
	char	   *raw_node_bits;
	char	   *raw_node_id;

	NoteForeignSettings();
	raw_epoch = ConfiguredValue("flakeid.epoch");
	raw_node_bits = ConfiguredValue("flakeid.node_bits");
	raw_node_id = ConfiguredValue("flakeid.node_id");

	DefineCustomStringVariable("flakeid.epoch",
							   "The moment flakeid timestamps count from.",
							   "An ISO-8601 UTC timestamp; part of the ID "
							   "layout, the same on every server.",
							   &epoch_guc,
							   FLAKE_DEFAULT_EPOCH,
							   LayoutContext(),
							   0,
							   CheckEpoch, AssignEpoch, NULL);
	if (raw_epoch != NULL && strcmp(raw_epoch, epoch_guc) != 0)
		Rejected("flakeid.epoch", raw_epoch, EPOCH_FORMAT_DETAIL,
				 LAYOUT_REJECTED_HINT);

	DefineCustomIntVariable("flakeid.node_bits",
							"Bits of the ID that hold the node id.",
							"The remaining of the 22 low bits hold the "
							"sequence; part of the ID layout.",
							&node_bits_guc,
							FLAKE_DEFAULT_NODE_BITS, 0, FLAKE_MAX_NODE_BITS,
							LayoutContext(),
							0,
							NULL, AssignNodeBits, NULL);
	if (!IntApplied(raw_node_bits, node_bits_guc))
		Rejected("flakeid.node_bits", raw_node_bits,
				 psprintf("flakeid.node_bits must be an integer from 0 to %d.",
						  FLAKE_MAX_NODE_BITS),
				 LAYOUT_REJECTED_HINT);

	DefineCustomIntVariable("flakeid.node_id",
							"This server's flakeid node id.",
							"Unique among the servers whose IDs meet; "
							"a standby shares its primary's.  -1, the "
							"default, means not set: no IDs are generated.",
							&flake_node_id,
							FLAKE_NODE_UNSET, FLAKE_NODE_UNSET,
							(1 << FLAKE_MAX_NODE_BITS) - 1,
							PGC_SIGHUP,
							0,
							CheckNodeId, NULL, NULL);
	if (!IntApplied(raw_node_id, flake_node_id))
		Rejected("flakeid.node_id", raw_node_id,
				 psprintf(NODE_RANGE_DETAIL,
						  guc_layout.node_bits, FlakeMaxNode(&guc_layout)),
				 NODE_RANGE_HINT);

	DefineCustomIntVariable("flakeid.max_lead",
							"How far generated IDs may run ahead of the "
							"system clock.",
							"IDs borrow future milliseconds when a "
							"millisecond's sequence runs out; past this "
							"lead, callers wait for the clock.",
							&flake_max_lead_ms,
							FLAKE_DEFAULT_MAX_LEAD_MS, 1, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, AssignMaxLead, NULL);

	DefineCustomIntVariable("flakeid.max_clock_wait",
							"The longest a call waits for the system clock "
							"to catch up.",
							"A longer wait, as after the clock steps "
							"backwards, fails with an error instead.",
							&flake_max_clock_wait_ms,
							FLAKE_DEFAULT_MAX_CLOCK_WAIT_MS, 0, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flakeid.max_lease_wait",
							"The longest a call waits for the time lease.",
							"A call that needs a longer lease waits for the "
							"state file and the WAL to be written and for the "
							"synchronous standbys to confirm; a longer wait "
							"fails with an error instead.",
							&flake_max_lease_wait_ms,
							FLAKE_DEFAULT_MAX_LEASE_WAIT_MS, 1, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flakeid.max_clock_skew",
							"How far the clocks of a primary and its standbys "
							"may disagree.",
							"A server that ends archive recovery continues "
							"this far, flakeid.max_lead and a lease ahead of "
							"its clock, above every ID an old primary can "
							"have returned.",
							&flake_max_clock_skew_ms,
							FLAKE_DEFAULT_MAX_CLOCK_SKEW_MS, 0, 3600 * 1000,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flakeid.max_batch",
							"The most IDs one nextflakes() call of a role "
							"without superuser may reserve.",
							"IDs reserved in one call are taken from the "
							"server's capacity at once.",
							&flake_max_batch,
							FLAKE_DEFAULT_MAX_BATCH, 1, INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("flakeid.cache",
							"The most IDs nextflake() reserves at a time in a "
							"backend.",
							"Above 1, a backend hands out the IDs it reserved "
							"within the millisecond it reserved them in: its "
							"own IDs still increase, but IDs of different "
							"backends within one millisecond need not.",
							&flake_cache,
							1, 1, FLAKE_MAX_CACHE,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineForeignSetting();
	MarkGUCPrefixReserved("flakeid");
	gucs_defined = true;
}

/*
 * The layout the settings give.  False when one of them was rejected at
 * startup, with its name in *bad_setting.
 */
bool
FlakeConfiguredLayout(FlakeLayout *layout, const char **bad_setting)
{
	*layout = guc_layout;
	if (bad_setting)
		*bad_setting = rejected_layout_setting;
	return rejected_layout_setting == NULL;
}

/* Neither generating nor decoding goes on with a rejected layout setting. */
void
FlakeReportInvalidLayout(const char *bad_setting)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("flakeid layout setting \"%s\" has an invalid value",
					bad_setting ? bad_setting : "flakeid.node_bits"),
			 errdetail("The server rejected the configured value and would otherwise use the default layout, "
					   "which need not be the one the IDs were made with."),
			 errhint("Correct the setting in the server's configuration and restart the server.")));
}

/*
 * Warn when flakeid.max_clock_skew leaves flakeid.max_clock_wait no room:
 * after the end of archive recovery the first calls wait about a lease
 * plus flakeid.max_clock_skew for the clock (see lease.c), and a call
 * that would wait longer than flakeid.max_clock_wait fails, so every call
 * of a promoted server would fail until its clock catches up.  At start
 * and at each reload that the lease worker takes in.
 */
void
FlakeCheckWaitSettings(void)
{
	if ((int64) FLAKE_LEASE_MS + flake_max_clock_skew_ms < flake_max_clock_wait_ms)
		return;
	ereport(WARNING,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("flakeid.max_clock_skew (%d ms) leaves no room in flakeid.max_clock_wait (%d ms)",
					flake_max_clock_skew_ms, flake_max_clock_wait_ms),
			 errdetail("After a promotion the first calls wait about %d ms plus flakeid.max_clock_skew for the clock, "
					   "and a call that would wait longer than flakeid.max_clock_wait fails: "
					   "every call would fail until the clock catches up.",
					   FLAKE_LEASE_MS),
			 errhint("Set flakeid.max_clock_wait above %d ms plus flakeid.max_clock_skew, or lower flakeid.max_clock_skew.",
					 FLAKE_LEASE_MS)));
}
