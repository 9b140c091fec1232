using Prometheus;
using Quartz;
using Queue.Core;
using Queue.Core.Data;
using Queue.Scheduler;

var builder = WebApplication.CreateSlimBuilder(args);
// Quartz needs the connection string while it is being configured, so the database is resolved (and migrated) here,
// before the host is built, rather than in DatabaseBootstrap's start-up hook.
var connectionString = await QueueDatabase.ResolveConnectionStringAsync(builder.Configuration);
builder.Configuration["ConnectionStrings:Queue"] = connectionString;
builder.Services.AddQueueCore();
builder.Services.AddQueueScheduler(builder.Configuration, QueueDatabase.Normalize(connectionString));

var app = builder.Build();
app.MapGet("/healthz", SchedulerHealth.CheckAsync);
app.MapMetrics("/metrics");
await app.RunAsync();
