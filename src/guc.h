/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  The flakeid.* configuration parameters, as this process applied them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKEID_GUC_H
#define FLAKEID_GUC_H

#include "layout.h"

extern int	flake_node_id;
extern int	flake_max_lead_ms;
extern int	flake_max_clock_wait_ms;
extern int	flake_max_lease_wait_ms;
extern int	flake_max_clock_skew_ms;
extern int	flake_max_batch;
extern int	flake_cache;
extern uint64 flake_layout_settings_gen;

extern void FlakeDefineGucs(void);
extern bool FlakeConfiguredLayout(FlakeLayout *layout, const char **bad_setting);
extern void FlakeReportInvalidLayout(const char *bad_setting);
extern bool FlakeSettingsFromConfig(void);
extern bool FlakeMaySetUp(void);
extern void FlakeReportForeignSetting(void);
extern void FlakeCheckWaitSettings(void);
extern int64 FlakeFloorLeadMs(void);

#endif							/* FLAKEID_GUC_H */
