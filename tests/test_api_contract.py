"""Every public name of the API contract (docs/api_contract.md) exists, where it says (users depend on them)."""
import pytest

import simtk

TOP_LEVEL = """
Rotation Transform Inertia MassProperties Body
Stage StageError StageTooLowError CacheEntryOutOfDateError TopologyVersionError System Subsystem State
TriggeredEventHandler ScheduledEventHandler PeriodicEventHandler TriggeredEventReporter ScheduledEventReporter
PeriodicEventReporter EventTriggerInfo Function
ExplicitEulerIntegrator RungeKutta2Integrator RungeKutta3Integrator RungeKuttaMersonIntegrator
RungeKuttaFeldbergIntegrator VerletIntegrator SemiExplicitEulerIntegrator SemiExplicitEuler2Integrator
ScipyIntegrator TimeStepper Assembler Markers QValue
MultibodySystem SimbodyMatterSubsystem MobilizedBody Motion GeneralForceSubsystem Force ForceSubsystem Constraint
""".split()

METHODS = {
    "Rotation": "from_matrix from_quaternion from_body_fixed_xyz matrix to_quaternion",
    "Transform": "R p",
    "Inertia": "matrix",
    "MassProperties": "from_central_inertia",
    "Body": "Rigid Massless",
    "Stage": "next prev",
    "System": "adopt_subsystem realize_topology get_default_state realize_model realize "
              "invalidate_system_topology_cache get_system_topology_cache_version add_event_handler "
              "add_event_reporter project get_num_subsystems get_num_realizations_of_this_stage",
    "Subsystem": "realize_subsystem_topology_impl realize_subsystem_model_impl realize_subsystem_instance_impl "
                 "realize_subsystem_time_impl realize_subsystem_position_impl realize_subsystem_velocity_impl "
                 "realize_subsystem_dynamics_impl realize_subsystem_acceleration_impl realize_subsystem_report_impl "
                 "allocate_q allocate_u allocate_z get_q upd_q get_u upd_u get_z upd_z get_qdot get_udot get_zdot "
                 "get_qdotdot upd_qdot upd_udot upd_zdot upd_qdotdot allocate_discrete_variable "
                 "allocate_auto_update_discrete_variable get_discrete_variable upd_discrete_variable "
                 "set_discrete_variable allocate_cache_entry allocate_lazy_cache_entry get_cache_entry "
                 "upd_cache_entry set_cache_entry is_cache_value_realized mark_cache_value_realized "
                 "mark_cache_value_not_realized allocate_q_err allocate_u_err allocate_udot_err upd_q_err upd_u_err "
                 "upd_udot_err invalidate_subsystem_topology_cache get_system get_my_subsystem_index",
    "State": "get_time set_time get_q get_u get_z get_y upd_q upd_u upd_z upd_y set_q set_u set_z set_y get_qdot "
             "get_udot get_zdot get_qdotdot get_q_err get_u_err get_udot_err get_multipliers get_nq get_nu get_nz "
             "get_system_stage get_subsystem_stage invalidate_all invalidate_all_cache_at_or_above copy",
    "TriggeredEventHandler": "get_value handle_event get_trigger_info",
    "ScheduledEventHandler": "get_next_event_time handle_event",
    "Function": "calc_value calc_derivative get_argument_size get_max_derivative_order "
                "Constant Linear Polynomial Step Sinusoid Spline",
    "RungeKuttaMersonIntegrator": "set_accuracy set_constraint_tolerance set_fixed_step_size set_initial_step_size "
                                  "set_minimum_step_size set_maximum_step_size set_final_time set_project_every_step "
                                  "set_use_infinity_norm set_internal_step_limit set_return_every_internal_step "
                                  "initialize reinitialize step_to step_by get_state get_advanced_state get_time "
                                  "is_simulation_over get_termination_reason get_num_steps_taken "
                                  "get_num_steps_attempted get_num_realizations get_num_projections "
                                  "get_num_error_test_failures get_method_name method_has_error_control",
    "TimeStepper": "initialize step_to get_state get_time",
    "Assembler": "set_accuracy set_tolerance lock_mobilizer lock_q restrict_q adopt_assembly_goal "
                 "adopt_assembly_error assemble",
    "Markers": "add_marker move_all_observations",
    "MultibodySystem": "get_matter_subsystem add_force_subsystem upd_rigid_body_forces upd_mobility_forces "
                       "get_rigid_body_forces get_mobility_forces calc_kinetic_energy calc_potential_energy calc_energy",
    "SimbodyMatterSubsystem": "get_num_bodies get_mobilized_body set_use_euler_angles calc_m calc_m_inv "
                              "multiply_by_m multiply_by_m_inv calc_residual_force_ignoring_constraints "
                              "calc_residual_force calc_acceleration_ignoring_constraints calc_acceleration "
                              "calc_kinetic_energy calc_system_mass calc_system_mass_center_location_in_ground "
                              "calc_system_mass_center_velocity_in_ground calc_system_momentum_about_ground_origin "
                              "calc_system_jacobian calc_station_jacobian calc_frame_jacobian "
                              "multiply_by_system_jacobian multiply_by_system_jacobian_transpose "
                              "calc_bias_for_system_jacobian calc_g calc_g_transpose multiply_by_g "
                              "multiply_by_g_transpose calc_projected_m_inv multiply_by_n multiply_by_n_inv calc_qdot "
                              "calc_mobilizer_reaction_forces add_in_station_force add_in_body_torque "
                              "add_in_mobility_force",
    "MobilizedBody": "Weld Pin Slider Screw Universal Cylinder BendStretch Planar Gimbal SphericalCoords Translation "
                     "Ball Free Ellipsoid LineOrientation FreeLine Bushing FunctionBased Custom Forward Reverse "
                     "get_mobilized_body_index get_parent_mobilized_body get_body_transform get_body_rotation "
                     "get_body_origin_location get_body_velocity get_body_angular_velocity get_body_origin_velocity "
                     "get_body_acceleration get_mobilizer_transform get_mobilizer_velocity get_q get_u get_qdot "
                     "get_udot set_q set_u get_one_q set_one_q get_one_u set_one_u get_num_q get_num_u "
                     "find_station_location_in_ground find_station_velocity_in_ground "
                     "find_station_acceleration_in_ground find_body_transform_in_another_body "
                     "express_vector_in_ground set_q_to_fit_transform set_u_to_fit_velocity apply_body_force "
                     "apply_one_mobility_force lock lock_at unlock is_locked get_matter_subsystem",
    "Motion": "Level Steady Sinusoid Custom",
    "Force": "enable disable is_disabled set_disabled_by_default calc_force_contribution "
             "calc_potential_energy_contribution UniformGravity Gravity TwoPointLinearSpring TwoPointLinearDamper "
             "TwoPointConstantForce MobilityLinearSpring MobilityLinearDamper MobilityConstantForce MobilityLinearStop "
             "ConstantForce ConstantTorque GlobalDamper LinearBushing DiscreteForces Custom",
    "ForceSubsystem": "calc_potential_energy",
    "Constraint": "enable disable is_disabled get_position_errors get_velocity_errors get_acceleration_errors "
                  "get_multipliers get_constrained_body_forces get_constrained_mobility_forces calc_power "
                  "get_num_constraint_equations_in_use Rod Ball Weld PointInPlane PointOnLine ConstantAngle "
                  "ConstantOrientation NoSlip1D ConstantCoordinate ConstantSpeed ConstantAcceleration CoordinateCoupler "
                  "SpeedCoupler PrescribedMotion Custom",
}

NESTED = {
    "Force.DiscreteForces": "set_all_mobility_forces set_all_body_forces set_one_mobility_force "
                            "add_force_to_body_point clear_all_forces",
    "Force.Custom.Implementation": "calc_force calc_potential_energy depends_only_on_positions realize_topology "
                                   "realize_model realize_instance realize_time realize_position realize_velocity "
                                   "realize_dynamics realize_acceleration realize_report",
    "Constraint.Custom.Implementation": "add_constrained_body add_constrained_mobilizer get_body_transform "
                                        "get_body_origin_location get_body_velocity get_body_acceleration get_one_q "
                                        "get_one_u get_one_udot add_in_station_force add_in_body_torque "
                                        "add_in_one_mobility_force realize_position_errors realize_position_dot_errors "
                                        "realize_position_dot_dot_errors apply_position_constraint_forces "
                                        "realize_velocity_errors realize_velocity_dot_errors "
                                        "apply_velocity_constraint_forces realize_acceleration_errors "
                                        "apply_acceleration_constraint_forces",
    "MobilizedBody.Custom.Implementation": "calc_mobilizer_transform_from_q multiply_by_h_matrix "
                                           "multiply_by_h_transpose multiply_by_h_dot_matrix multiply_by_h_dot_transpose "
                                           "multiply_by_n_matrix multiply_by_n_inv_matrix multiply_by_n_dot_matrix "
                                           "set_q_to_fit_transform set_u_to_fit_velocity",
    "MobilizedBody.Pin": "set_angle get_angle set_rate get_rate",
    "MobilizedBody.Slider": "set_length get_length",
    "Motion.Level": "NoLevel Acceleration Velocity Position",
}


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_top_level_name(name):
    assert hasattr(simtk, name), f"simtk.{name} is missing"


def _resolve(path: str):
    obj = simtk
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("owner,attr", [(o, a) for o, names in {**METHODS, **NESTED}.items() for a in names.split()])
def test_member(owner, attr):
    assert hasattr(_resolve(owner), attr), f"{owner}.{attr} is missing"


def test_stage_values():
    names = "Empty Topology Model Instance Time Position Velocity Dynamics Acceleration Report Infinity".split()
    assert [simtk.Stage[n].value for n in names] == list(range(11))


def test_testing_tools_exist():
    import simtk.testing as t
    for name in ("multibody_systems", "states", "check_mobilizer", "check_force", "check_realize_is_pure",
                 "check_caching", "check_constraint"):
        assert hasattr(t, name), f"simtk.testing.{name} is missing"
