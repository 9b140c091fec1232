using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using OpenTelemetry.Metrics;
using OpenTelemetry.Resources;
using OpenTelemetry.Trace;

namespace Queue.Core.Telemetry;

public static class TelemetryHosting
{
    /// <summary>The standard variable the OTLP exporter reads; unset means no OpenTelemetry at all.</summary>
    public const string EndpointVariable = "OTEL_EXPORTER_OTLP_ENDPOINT";

    /// <summary>
    /// Exports the <see cref="QueueTracing"/> spans, the "Queue" meter (what /metrics shows) and ASP.NET Core's own
    /// spans and metrics over OTLP when <see cref="EndpointVariable"/> is set; the exporter reads it and the other
    /// OTEL_* variables (protocol, headers, OTEL_SERVICE_NAME...) itself. Without it nothing is registered, so nothing
    /// listens to the source and tracing costs one <c>HasListeners()</c> check per operation.
    /// </summary>
    public static IHostApplicationBuilder AddQueueTelemetry(this IHostApplicationBuilder builder, string serviceName)
    {
        if (string.IsNullOrWhiteSpace(builder.Configuration[EndpointVariable]))
        {
            return builder;
        }
        QueueTracing.UseSalt(builder.Configuration["Telemetry:TraceSalt"]);
        builder.Services.AddOpenTelemetry()
            .ConfigureResource(r => r.AddService(serviceName))
            .WithTracing(t => t.AddSource(QueueTracing.Name).AddAspNetCoreInstrumentation().AddOtlpExporter())
            .WithMetrics(m => m.AddMeter(QueueTracing.Name).AddAspNetCoreInstrumentation().AddOtlpExporter());
        return builder;
    }
}
