using Prometheus;
using Quartz;
using Queue.Core.Composition;
using Queue.Core.Data;
using Queue.Core.Telemetry;
using Queue.Scheduler;

var builder = WebApplication.CreateSlimBuilder(args);
// Quartz needs the connection string while it is being configured, so it is resolved here (migrations still run in
// DatabaseBootstrap before any hosted service starts).
var connectionString = QueueDatabase.ResolveConnectionString(builder.Configuration);
builder.Configuration["ConnectionStrings:Queue"] = connectionString;
builder.Services.AddQueueCore();
builder.Services.AddQueueScheduler(builder.Configuration, QueueDatabase.Normalize(connectionString));
builder.AddQueueTelemetry("queue-scheduler");

var app = builder.Build();
app.MapGet("/healthz", SchedulerHealth.CheckAsync);
app.MapMetrics("/metrics");
await app.RunAsync();
