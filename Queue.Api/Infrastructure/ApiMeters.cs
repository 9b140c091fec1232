using System.Diagnostics.Metrics;
using Prometheus;
using Queue.Core.Telemetry;

namespace Queue.Api.Infrastructure;

/// <summary>
/// What /metrics shows, also as instruments of the "Queue" <see cref="Meter"/>, under the same names, so that an
/// OpenTelemetry collector can take them (docs/DESIGN.md "Tracing and metrics"). Each is observable and reads the
/// Prometheus instrument it mirrors when a collector collects: one source of truth, and no cost while no MeterProvider
/// listens. Created once per process, as the Prometheus instruments are.
/// </summary>
public static class ApiMeters
{
    private static int registered;

    public static void Register()
    {
        if (Interlocked.Exchange(ref registered, 1) == 1)
        {
            return;
        }
        var m = QueueTracing.Meter;
        Mirror(m, ApiMetrics.Claims);
        Mirror(m, ApiMetrics.LeasesExpired);
        Mirror(m, ApiMetrics.Completions);
        Mirror(m, ApiMetrics.OrderingRewrites);
        Mirror(m, ApiMetrics.ReplicaLag);
        Mirror(m, ApiMetrics.ReadsFromReplica);
    }

    /// <summary>A counter without labels, read as it is now.</summary>
    public static ObservableCounter<double> Mirror(Meter meter, Counter counter) =>
        meter.CreateObservableCounter(counter.Name, () => counter.Value, description: counter.Help);

    /// <summary>A gauge, one measurement per label set it has (none for a gauge without labels).</summary>
    public static ObservableGauge<double> Mirror(Meter meter, Gauge gauge, Action? refresh = null) =>
        meter.CreateObservableGauge(gauge.Name, () =>
        {
            refresh?.Invoke();
            return Measure(gauge);
        }, description: gauge.Help);

    private static List<Measurement<double>> Measure(Gauge gauge)
    {
        if (gauge.LabelNames.Length == 0)
        {
            return [new Measurement<double>(gauge.Value)];
        }
        var names = gauge.LabelNames;
        return gauge.GetAllLabelValues().Select(values =>
        {
            var tags = new KeyValuePair<string, object?>[names.Length];
            for (var i = 0; i < names.Length; i++)
            {
                tags[i] = new(names[i], values[i]);
            }
            return new Measurement<double>(gauge.WithLabels(values).Value, tags);
        }).ToList();
    }
}
