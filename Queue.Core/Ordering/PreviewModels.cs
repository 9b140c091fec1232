using System.Text.Json;
using System.Text.Json.Serialization;

namespace Queue.Core.Ordering;

/// <summary>What to preview (docs/DESIGN.md "Preview").</summary>
/// <param name="Mode"><c>smallest</c> or <c>oldest</c>: the next rewrite into that mode; null: the ordering as it stands now.</param>
/// <param name="Policy"><c>seed</c> or <c>tenant-fair</c>: how claims follow the ordering.</param>
/// <param name="Overrides">Overrides being considered (job id to value): they win over the stored ones, as overrides do.</param>
/// <param name="Task">Only jobs with work of this task: the order a worker asking for it would meet.</param>
/// <param name="TenantId">Only this tenant's jobs are listed; positions still count every tenant's jobs.</param>
/// <param name="Top">How many positions to list; memory is bounded by this, never by the queue's depth.</param>
public sealed record PreviewRequest(
    string? Mode,
    string Policy,
    IReadOnlyDictionary<long, long>? Overrides = null,
    string? Task = null,
    long? TenantId = null,
    int Top = OrderingPreview.DefaultTop);

/// <summary>One job's place in the preview.</summary>
/// <param name="ClaimsBefore">Items handed out before this job's first one, by the model of the policy.</param>
public sealed record PreviewPosition(int Position, long JobId, long TenantId, string Tenant, string Name, long ItemsLeft, long Value,
    string Reason, long ClaimsBefore, DateTime? Eta);

/// <summary>One tenant in the preview: its jobs and items, its expected share of claims, and when its first and last items go.</summary>
public sealed record PreviewTenant(long TenantId, string Tenant, long Jobs, long Items, double Share, DateTime? EtaFirst, DateTime? EtaLast);

/// <param name="Mode">The mode previewed, or <c>current</c>.</param>
/// <param name="ItemsPerSecond">The measured drain rate the ETAs assume; null when none is known (no ETAs then).</param>
/// <param name="Jobs">Jobs with work that claims would serve (blocked ones are not counted).</param>
public sealed record PreviewResult(string Mode, string Policy, DateTime GeneratedAt, IReadOnlyList<PreviewPosition> Positions,
    IReadOnlyList<PreviewTenant> Tenants, long Jobs, long Blocked, double? ItemsPerSecond)
{
    /// <summary>The listed position of a job, if it is among the listed ones.</summary>
    public int? PositionOf(long jobId) => Positions.FirstOrDefault(p => p.JobId == jobId)?.Position;
}

/// <summary>What an override would do before it is saved: the job's place now and then, and who moves back.</summary>
/// <param name="Before">The job's position now; null when it is beyond <see cref="OrderingPreview.WhatIfDepth"/> (or not claimable).</param>
/// <param name="MovedBack">Jobs that would go back, with how far (positions), nearest the head first, at most a page of them.</param>
/// <param name="MovedBackCount">Every job within the compared depth that would go back.</param>
public sealed record WhatIfResult(long JobId, long Value, int? Before, int? After, IReadOnlyList<(PreviewPosition Job, int By)> MovedBack, int MovedBackCount);

/// <summary>The JSON of <c>Queue.Admin preview --json</c>.</summary>
public sealed record PreviewJson(string Mode, string Policy, DateTime GeneratedAt, IReadOnlyList<PreviewJsonPosition> Positions, IReadOnlyList<PreviewJsonTenant> Tenants)
{
    public static PreviewJson From(PreviewResult r) => new(r.Mode, r.Policy, r.GeneratedAt,
        [.. r.Positions.Select(p => new PreviewJsonPosition(p.Position, p.JobId, p.Tenant, p.Name, p.ItemsLeft, p.Value, p.Reason))],
        [.. r.Tenants.Select(t => new PreviewJsonTenant(t.Tenant, t.Jobs, t.Items, Math.Round(t.Share, 4), t.EtaFirst, t.EtaLast))]);

    public string Serialize() => JsonSerializer.Serialize(this, PreviewJsonContext.Default.PreviewJson);
}

public sealed record PreviewJsonPosition(int Position, long JobId, string Tenant, string Name, long ItemsLeft, long Value, string Reason);

public sealed record PreviewJsonTenant(string Tenant, long Jobs, long Items, double Share, DateTime? EtaFirst, DateTime? EtaLast);

[JsonSourceGenerationOptions(JsonSerializerDefaults.Web, WriteIndented = true)]
[JsonSerializable(typeof(PreviewJson))]
internal sealed partial class PreviewJsonContext : JsonSerializerContext;
