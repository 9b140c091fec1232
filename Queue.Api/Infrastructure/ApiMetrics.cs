using Prometheus;

namespace Queue.Api.Infrastructure;

/// <summary>Process-wide Prometheus instruments of the Api. Created at start-up so every series exists from the first scrape.</summary>
public static class ApiMetrics
{
    public static readonly Counter Claims = Metrics.CreateCounter("queue_claims_total", "Items handed out by POST /next.");

    public static readonly Counter LeasesExpired = Metrics.CreateCounter("queue_leases_expired_total", "Leases that expired and were reclaimed.");

    public static readonly Counter Completions = Metrics.CreateCounter("queue_completions_total", "Items completed by workers.");

    /// <summary>Touches every series so that Prometheus sees zeros before the first event.</summary>
    public static void Initialise()
    {
        Claims.Inc(0);
        LeasesExpired.Inc(0);
        Completions.Inc(0);
    }
}
